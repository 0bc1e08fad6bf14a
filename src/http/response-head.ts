import { STATUS_CODES } from 'node:http';

/**
 * The head of a response the front door writes itself, byte for byte what node:http
 * writes for `res.writeHead(status, headers)` on a keep-alive connection: the headers
 * in the order given, then `Date`, `Connection: keep-alive` and `Keep-Alive`.
 */
export function responseHead(status: number, headers: Readonly<Record<string, string | number>>, keepAliveMs: number): string {
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'unknown'}\r\n`;
  for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
  head += `Date: ${httpDate()}\r\nConnection: keep-alive\r\n`;
  // As node:http: any timeout at all is announced, in whole seconds (so 0 under one).
  if (keepAliveMs > 0) head += `Keep-Alive: timeout=${Math.floor(keepAliveMs / 1000)}\r\n`;
  return head + '\r\n';
}

let date = '';
let dateExpires = 0;

/** The `Date` header, formatted once per second as node:http does. */
function httpDate(): string {
  const now = Date.now();
  if (now >= dateExpires) {
    date = new Date(now).toUTCString();
    dateExpires = now - (now % 1000) + 1000;
  }
  return date;
}
