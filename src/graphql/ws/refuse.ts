import { STATUS_CODES, type OutgoingHttpHeaders } from 'node:http';
import type { Duplex } from 'node:stream';

/** Answers an upgrade that is not accepted, as ws answers a refused handshake, then closes. */
export function refuse(socket: Duplex, status: number, headers: OutgoingHttpHeaders = {}, body?: object): void {
  const content = body ? JSON.stringify(body) : '';
  const head: OutgoingHttpHeaders = {
    connection: 'close',
    ...(body ? { 'content-type': 'application/json; charset=utf-8' } : {}),
    'content-length': Buffer.byteLength(content),
    ...headers,
  };
  const lines = Object.entries(head).map(([name, value]) => `${name}: ${String(value)}\r\n`);
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${content}`);
}
