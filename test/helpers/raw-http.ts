import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/**
 * A raw HTTP/1.1 client for tests that must control the bytes on the wire: pipelined
 * requests in one write, requests split anywhere, one connection reused on purpose.
 * Responses are read as servers frame them: Content-Length, chunked (with trailers),
 * no body (1xx, 204, 304), or up to the end of the connection.
 */

export interface HttpResponse {
  statusLine: string;
  status: number;
  /** The head as sent, CRLF CRLF included. */
  head: string;
  headers: [string, string][];
  body: Buffer;
  text: string;
}

export const headerOf = (res: HttpResponse, name: string) => res.headers.find(([n]) => n === name.toLowerCase())?.[1];

/** One complete response at the start of `buf`, or null when more bytes are needed. */
function parseResponse(buf: Buffer, atEnd: boolean): { response: HttpResponse; length: number } | null {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const head = buf.toString('latin1', 0, headEnd + 4);
  const lines = head.slice(0, -4).split('\r\n');
  const statusLine = lines[0]!;
  const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(statusLine);
  if (!match) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
  const status = Number(match[1]);
  const headers = lines.slice(1).map((line): [string, string] => {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`not a header line: ${JSON.stringify(line)}`);
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
  });
  const pos = headEnd + 4;
  const done = (body: Buffer, length: number) => ({
    response: { statusLine, status, head, headers, body: Buffer.from(body), text: body.toString('utf8') },
    length,
  });
  if (status < 200 || status === 204 || status === 304) return done(Buffer.alloc(0), pos);
  const te = headers.find(([n]) => n === 'transfer-encoding')?.[1];
  const cl = headers.find(([n]) => n === 'content-length')?.[1];
  if (te !== undefined && /chunked/i.test(te)) {
    const parts: Buffer[] = [];
    let at = pos;
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd < 0) return null;
      const size = parseInt(buf.toString('latin1', at, lineEnd).split(';')[0]!, 16);
      if (Number.isNaN(size)) throw new Error(`bad chunk size at ${at}`);
      at = lineEnd + 2;
      if (size === 0) {
        // Trailers, up to an empty line.
        for (;;) {
          const end = buf.indexOf('\r\n', at);
          if (end < 0) return null;
          const empty = end === at;
          at = end + 2;
          if (empty) return done(Buffer.concat(parts), at);
        }
      }
      if (buf.length < at + size + 2) return null;
      parts.push(buf.subarray(at, at + size));
      at += size + 2;
    }
  }
  if (cl !== undefined) {
    const n = Number(cl);
    if (buf.length < pos + n) return null;
    return done(buf.subarray(pos, pos + n), pos + n);
  }
  // Delimited by the end of the connection.
  return atEnd ? done(buf.subarray(pos), buf.length) : null;
}

/** A byte queue that grows by doubling and consumes by moving its start (16 MB bodies, 2,000 responses). */
class Bytes {
  private store = Buffer.alloc(64 * 1024);
  private start = 0;
  private end = 0;
  push(chunk: Buffer): void {
    if (this.end + chunk.length > this.store.length) {
      const live = this.end - this.start;
      const next = Buffer.alloc(Math.max(this.store.length, (live + chunk.length) * 2));
      this.store.copy(next, 0, this.start, this.end);
      this.store = next;
      this.start = 0;
      this.end = live;
    }
    chunk.copy(this.store, this.end);
    this.end += chunk.length;
  }
  view(): Buffer {
    return this.store.subarray(this.start, this.end);
  }
  consume(n: number): void {
    this.start += n;
    if (this.start === this.end) this.start = this.end = 0;
  }
}

export class RawClient {
  private readonly bytes = new Bytes();
  private waiting: (() => void)[] = [];
  closed = false;
  closedAt = 0;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.bytes.push(chunk);
      this.notify();
    });
    socket.on('close', () => {
      this.closed = true;
      this.closedAt = Date.now();
      this.notify();
    });
    socket.on('error', () => {});
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<RawClient> {
    const socket = connect({ port, host, noDelay: true });
    const client = new RawClient(socket);
    await once(socket, 'connect');
    return client;
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  private notify(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }

  /** True when data arrived or the connection closed within `ms`. */
  private changed(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiting = this.waiting.filter((w) => w !== wake);
        resolve(false);
      }, Math.max(0, ms));
      this.waiting.push(wake);
    });
  }

  private describe(): string {
    return JSON.stringify(this.bytes.view().toString('latin1', 0, 400));
  }

  async response(timeoutMs = 5000): Promise<HttpResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = parseResponse(this.bytes.view(), this.closed);
      if (parsed) {
        this.bytes.consume(parsed.length);
        return parsed.response;
      }
      if (this.closed) throw new Error(`connection closed before a complete response; unread: ${this.describe()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no complete response within ${timeoutMs} ms; unread: ${this.describe()}`);
      await this.changed(left);
    }
  }

  async responses(n: number, timeoutMs = 5000): Promise<HttpResponse[]> {
    const out: HttpResponse[] = [];
    for (let i = 0; i < n; i++) out.push(await this.response(timeoutMs));
    return out;
  }

  async waitClosed(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await this.changed(left);
    }
    return true;
  }

  /** Everything the server sends until it closes the connection or falls quiet for `quietMs`. */
  async settle(quietMs = 150, maxMs = 5000): Promise<{ responses: HttpResponse[]; closed: boolean; rest: string }> {
    const deadline = Date.now() + maxMs;
    while (!this.closed && Date.now() < deadline) {
      if (!(await this.changed(Math.min(quietMs, deadline - Date.now())))) break;
    }
    const responses: HttpResponse[] = [];
    for (;;) {
      const parsed = parseResponse(this.bytes.view(), this.closed);
      if (!parsed) break;
      this.bytes.consume(parsed.length);
      responses.push(parsed.response);
    }
    return { responses, closed: this.closed, rest: this.bytes.view().toString('latin1') };
  }
}

/** A POST /graphql request as bytes, with the headers a plain client sends. */
export function rawPost(body: string, headers: Record<string, string> = {}): string {
  const all = { host: 'inkwell.test', 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers };
  const lines = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `POST /graphql HTTP/1.1\r\n${lines}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
