import { connect, type Socket } from 'node:net';

/**
 * A raw HTTP/1.1 client for tests that must control the bytes on the wire: pipelined
 * requests in one write, requests split anywhere, one connection reused on purpose.
 * Responses are read as node:http and Fastify frame them (Content-Length or chunked).
 */

export interface RawResponse {
  /** Status line and header lines, as sent (without the blank line). */
  head: string;
  status: number;
  headers: Record<string, string>;
  body: string;
}

export class RawConnection {
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  closed = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
    socket.on('close', () => {
      this.closed = true;
      this.waiting?.();
    });
    socket.on('error', () => {});
  }

  static async open(url: string): Promise<RawConnection> {
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RawConnection(socket);
  }

  write(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** The next complete response; rejects if the connection closes first or after `timeoutMs`. */
  async response(timeoutMs = 5000): Promise<RawResponse> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.closed) throw new Error(`connection closed; ${this.buffer.length} bytes unread`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no complete response in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
  }

  /** Resolves once the server has closed the connection. */
  async closedByServer(timeoutMs = 5000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    return this.closed;
  }

  close(): void {
    this.socket.destroy();
  }

  private parse(): RawResponse | undefined {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return undefined;
    const head = this.buffer.toString('latin1', 0, end);
    const [statusLine, ...lines] = head.split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    let at = end + 4;
    let body: Buffer;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = this.buffer.indexOf('\r\n', at);
        if (lineEnd < 0) return undefined;
        const size = parseInt(this.buffer.toString('latin1', at, lineEnd), 16);
        if (this.buffer.length < lineEnd + 2 + size + 2) return undefined;
        parts.push(this.buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (this.buffer.length < at + length) return undefined;
      body = this.buffer.subarray(at, at + length);
      at += length;
    }
    this.buffer = this.buffer.subarray(at);
    return { head, status: Number(statusLine!.split(' ')[1]), headers, body: body.toString('utf8') };
  }
}

/** A POST /graphql request as bytes, with the headers a plain client sends. */
export function rawPost(body: string, headers: Record<string, string> = {}): string {
  const all = { host: 'inkwell.test', 'content-type': 'application/json', accept: 'application/graphql-response+json', ...headers };
  const lines = Object.entries(all).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `POST /graphql HTTP/1.1\r\n${lines}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
