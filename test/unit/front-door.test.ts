import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { FrontDoor, type FrontAnswer, type FrontRequest, type FrontResponse } from '../../src/http/front-door.js';
import { InnerSocket } from '../../src/http/inner-socket.js';

/**
 * The front door (src/http/front-door.ts, front-connection.ts, inner-socket.ts,
 * response-head.ts) standalone, over real TCP: raw request bytes in, raw response bytes
 * out, parsed here. Whatever node:http does is the reference: where the door hands a
 * request or a connection to node:http, the bytes on the wire are compared with those a
 * plain `http.createServer` (same handler, no door) sends for the same input.
 *
 * The test answer answers bodies (or URLs) containing "hit" with `door:<body>`, declines
 * those containing "miss"; the node:http handler answers `node:<method> <url> <body>`,
 * 80 ms late when the body or URL contains "slow".
 */

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const HOST = 'door.test';

// ---------------------------------------------------------------------------------------
// Requests

function post(body: string, extra = '', url = '/graphql'): string {
  return (
    `POST ${url} HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n${extra}` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

function get(url: string, extra = ''): string {
  return `GET ${url} HTTP/1.1\r\nHost: ${HOST}\r\n${extra}\r\n`;
}

const hit = (n: number | string = 1, extra = '') => post(`{"query":"q","hit":${JSON.stringify(n)}}`, extra);
const miss = (n: number | string = 1, extra = '') => post(`{"query":"q","miss":${JSON.stringify(n)}}`, extra);
const doorBody = (n: number | string = 1) => `door:{"query":"q","hit":${JSON.stringify(n)}}`;
const nodeBody = (body: string, method = 'POST', url = '/graphql') => `node:${method} ${url} ${body}`;
const missBody = (n: number | string = 1) => nodeBody(`{"query":"q","miss":${JSON.stringify(n)}}`);

// ---------------------------------------------------------------------------------------
// Answers on both sides

/** The door's response to `text`: status from `"status":N`, padded to `"size":N`, more headers for "extra". */
function respond(text: string): FrontResponse {
  const status = Number(/"status":(\d{3})/.exec(text)?.[1] ?? 200);
  const size = Number(/"size":(\d+)/.exec(text)?.[1] ?? 0);
  let body = Buffer.from(`door:${text}`);
  if (size > body.length) body = Buffer.concat([body, Buffer.alloc(size - body.length, 0x2e)]);
  const headers: Record<string, string | number> = { 'content-type': 'application/json; charset=utf-8' };
  if (text.includes('extra')) {
    headers['cache-control'] = 'public, max-age=5';
    headers['x-b'] = 'two';
    headers['x-a'] = 'one';
    headers.etag = '"abc"';
  }
  headers['content-length'] = body.length;
  return { status, headers, body };
}

/** The node:http handler of both the door's server and the plain reference server. */
function nodeHandler(seen: IncomingMessage[] = [], addresses: { address?: string; port?: number }[] = []) {
  return (req: IncomingMessage, res: ServerResponse) => {
    seen.push(req);
    addresses.push({ address: req.socket.remoteAddress, port: req.socket.remotePort });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const text = nodeBody(body, req.method, req.url);
      const send = () => {
        if (req.url?.includes('chunked')) {
          // No Content-Length: node:http sends it chunked.
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
          res.write(text.slice(0, 7));
          res.end(text.slice(7));
          return;
        }
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
        res.end(text);
      };
      if (body.includes('slow') || req.url?.includes('slow')) setTimeout(send, 80);
      else send();
    });
  };
}

// ---------------------------------------------------------------------------------------
// Servers

type Mode = 'sync' | 'async';

interface DoorSetup {
  door: FrontDoor;
  server: Server;
  port: number;
  /** Every request offered to `answer`. */
  offered: FrontRequest[];
  declined: { request: FrontRequest; raw: IncomingMessage }[];
  /** Every request node:http's handler received. */
  nodeSeen: IncomingMessage[];
  /** The client address each of them saw on `req.socket`, then. */
  addresses: { address?: string; port?: number }[];
  errors: unknown[];
}

const servers: Server[] = [];
const doors: FrontDoor[] = [];
const clients: Client[] = [];

async function listen(server: Server): Promise<number> {
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return (server.address() as AddressInfo).port;
}

async function startDoor(options: { mode?: Mode; keepAliveTimeout?: number; asyncMs?: number } = {}): Promise<DoorSetup> {
  const { mode = 'sync', keepAliveTimeout = 5000, asyncMs = 3 } = options;
  const offered: FrontRequest[] = [];
  const declined: { request: FrontRequest; raw: IncomingMessage }[] = [];
  const nodeSeen: IncomingMessage[] = [];
  const addresses: { address?: string; port?: number }[] = [];
  const errors: unknown[] = [];
  const door = new FrontDoor();
  doors.push(door);
  const server = door.serverFactory(nodeHandler(nodeSeen, addresses), { keepAliveTimeout });
  const answer: FrontAnswer = {
    answer(request) {
      offered.push(request);
      const text = request.body ?? request.url;
      if (text.includes('throw')) throw new Error('the answer threw');
      if (text.includes('reject')) return Promise.reject(new Error('the answer rejected'));
      const result = text.includes('hit') ? respond(text) : undefined;
      if (mode === 'sync') return result;
      return new Promise<FrontResponse | undefined>((resolve) => {
        if (asyncMs > 0) setTimeout(() => resolve(result), asyncMs);
        else setImmediate(() => resolve(result));
      });
    },
    declined(request, raw) {
      declined.push({ request, raw });
    },
  };
  const log = {
    level: 'warn',
    info() {},
    warn() {},
    debug() {},
    trace() {},
    fatal() {},
    error(obj: unknown) {
      errors.push(obj);
    },
    child() {
      return log;
    },
  };
  door.open(answer, log as unknown as FastifyBaseLogger);
  const port = await listen(server);
  return { door, server, port, offered, declined, nodeSeen, addresses, errors };
}

/** node:http alone, as the reference. */
async function startPlain(
  handler: (req: IncomingMessage, res: ServerResponse) => void = nodeHandler(),
  keepAliveTimeout = 5000,
): Promise<number> {
  const server = createServer(handler);
  server.keepAliveTimeout = keepAliveTimeout;
  return listen(server);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  for (const door of doors.splice(0)) door.close();
  await Promise.all(servers.splice(0).map(closeServer));
});

// ---------------------------------------------------------------------------------------
// A client that reads HTTP/1.1 responses itself

interface HttpResponse {
  statusLine: string;
  status: number;
  /** The head as sent, CRLF CRLF included. */
  head: string;
  headers: [string, string][];
  body: Buffer;
  text: string;
}

const headerOf = (res: HttpResponse, name: string) => res.headers.find(([n]) => n === name.toLowerCase())?.[1];

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

class Client {
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

  static async connect(port: number): Promise<Client> {
    const socket = connect({ port, host: '127.0.0.1', noDelay: true });
    const client = new Client(socket);
    clients.push(client);
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

const withoutDate = (head: string) => head.replace(/\r\nDate: [^\r]*/, '');

/** What a client sees of a whole exchange, Date aside. */
async function exchange(port: number, writes: (string | Buffer)[], gapMs = 0) {
  const client = await Client.connect(port);
  for (const data of writes) {
    client.write(data);
    if (gapMs) await sleep(gapMs);
  }
  const { responses, closed, rest } = await client.settle();
  return { responses: responses.map((r) => withoutDate(r.head) + r.text), closed, rest };
}

const texts = (responses: HttpResponse[]) => responses.map((r) => r.text);

// ---------------------------------------------------------------------------------------

describe('the response head the door writes', () => {
  for (const keepAliveTimeout of [5000, 200, 0]) {
    it(`is node:http's head for the same status and headers, Date aside (keepAliveTimeout ${keepAliveTimeout})`, async () => {
      const door = await startDoor({ keepAliveTimeout });
      const plainPort = await startPlain((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const r = respond(Buffer.concat(chunks).toString('utf8'));
          res.writeHead(r.status, r.headers);
          res.end(r.body);
        });
      }, keepAliveTimeout);
      const bodies = ['{"hit":1}', '{"hit":2,"extra":1}', '{"hit":3,"status":404}', '{"hit":4,"status":203,"extra":1}'];
      const a = await Client.connect(door.port);
      const b = await Client.connect(plainPort);
      for (const body of bodies) {
        const before = door.door.answered;
        a.write(post(body));
        b.write(post(body));
        const [fromDoor, fromNode] = [await a.response(), await b.response()];
        expect(door.door.answered).toBe(before + 1);
        expect(withoutDate(fromDoor.head)).toBe(withoutDate(fromNode.head));
        expect(fromDoor.body.equals(fromNode.body)).toBe(true);
        expect(fromDoor.text).toBe(`door:${body}`);
        // The Date line: present once, right after the given headers, current.
        const dates = fromDoor.headers.filter(([n]) => n === 'date');
        expect(dates).toHaveLength(1);
        expect(dates[0]![1]).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
        expect(Math.abs(Date.parse(dates[0]![1]) - Date.now())).toBeLessThan(3000);
        expect(fromDoor.headers.map(([n]) => n).indexOf('date')).toBe(fromNode.headers.map(([n]) => n).indexOf('date'));
      }
      if (keepAliveTimeout === 5000) {
        // The concrete shape, for the record.
        a.write(post('{"hit":5}'));
        expect(withoutDate((await a.response()).head)).toBe(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: 14\r\n' +
            'Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n',
        );
      }
    });
  }
});

for (const mode of ['sync', 'async'] as const) {
  describe(`with a ${mode} answer`, () => {
    it('answers a hit itself and passes a miss to node:http', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      c.write(hit(1));
      expect((await c.response()).text).toBe(doorBody(1));
      expect(s.door.answered).toBe(1);
      c.write(miss(1));
      expect((await c.response()).text).toBe(missBody(1));
      expect(s.door.answered).toBe(1);
      c.write(get('/graphql?q=hit'));
      expect((await c.response()).text).toBe('door:/graphql?q=hit');
      c.write(get('/graphql?q=miss'));
      expect((await c.response()).text).toBe(nodeBody('', 'GET', '/graphql?q=miss'));
      expect(s.door.answered).toBe(2);
      expect(s.offered.map((r) => r.body ?? r.url)).toEqual([
        '{"query":"q","hit":1}',
        '{"query":"q","miss":1}',
        '/graphql?q=hit',
        '/graphql?q=miss',
      ]);
      expect(s.nodeSeen.map((r) => r.url)).toEqual(['/graphql', '/graphql?q=miss']);
      expect(c.closed).toBe(false);
    });

    it('keeps pipelined responses in order: hit, slow miss, hit, non-candidate, hit', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      const slowMiss = post('{"query":"q","miss":"slow"}');
      c.write(hit(1) + slowMiss + hit(2) + get('/other') + hit(3));
      const responses = await c.responses(5);
      expect(texts(responses)).toEqual([
        doorBody(1),
        nodeBody('{"query":"q","miss":"slow"}'),
        doorBody(2),
        nodeBody('', 'GET', '/other'),
        doorBody(3),
      ]);
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(s.door.answered).toBe(3);
      // Nothing more arrives, and the connection stays open.
      const after = await c.settle(100);
      expect(after.responses).toEqual([]);
      expect(after.rest).toBe('');
      expect(after.closed).toBe(false);
    });

    it('answers a request written one byte at a time, once', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      const bytes = Buffer.from(hit('bytes'));
      for (let i = 0; i < bytes.length; i++) {
        c.write(bytes.subarray(i, i + 1));
        await sleep(1);
      }
      expect((await c.response()).text).toBe(doorBody('bytes'));
      expect(s.door.answered).toBe(1);
      expect(s.offered).toHaveLength(1);
      expect(s.offered[0]!.body).toBe('{"query":"q","hit":"bytes"}');
      // A miss byte by byte reaches node:http intact.
      const missBytes = Buffer.from(miss('bytes'));
      for (let i = 0; i < missBytes.length; i++) {
        c.write(missBytes.subarray(i, i + 1));
        if (i % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      expect((await c.response()).text).toBe(missBody('bytes'));
      expect(s.offered).toHaveLength(2);
      const after = await c.settle(50);
      expect(after.responses).toEqual([]);
    });

    it('answers a request split at every point, and one split between head and body', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      const bytes = Buffer.from(hit('split'));
      for (let k = 1; k < bytes.length; k++) {
        c.write(bytes.subarray(0, k));
        await sleep(2);
        c.write(bytes.subarray(k));
        const res = await c.response();
        expect(res.text, `split at ${k}`).toBe(doorBody('split'));
      }
      expect(s.door.answered).toBe(bytes.length - 1);
      expect(s.offered).toHaveLength(bytes.length - 1);

      const request = hit('head-body');
      const bodyAt = request.indexOf('\r\n\r\n') + 4;
      c.write(request.slice(0, bodyAt));
      await sleep(30);
      expect(s.offered).toHaveLength(bytes.length - 1); // nothing offered without the body
      c.write(request.slice(bodyAt));
      expect((await c.response()).text).toBe(doorBody('head-body'));
      expect(s.door.answered).toBe(bytes.length);
    });

    it('answers hits at the door after a first request that was a miss', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      c.write(miss('first'));
      expect((await c.response()).text).toBe(missBody('first'));
      expect(s.door.answered).toBe(0);
      for (let i = 1; i <= 3; i++) {
        c.write(hit(i));
        expect((await c.response()).text).toBe(doorBody(i));
        expect(s.door.answered).toBe(i);
      }
      c.write(miss('again') + hit(4));
      expect(texts(await c.responses(2))).toEqual([missBody('again'), doorBody(4)]);
      expect(s.door.answered).toBe(4);
    });

    it('gives a connection whose first request is outside the subset (HTTP/1.0) to node:http for good', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      c.write(`GET /healthz HTTP/1.0\r\nHost: ${HOST}\r\nConnection: keep-alive\r\n\r\n`);
      const first = await c.response();
      expect(first.text).toBe(nodeBody('', 'GET', '/healthz'));
      expect(headerOf(first, 'connection')).toBe('keep-alive');
      c.write(hit(1));
      expect((await c.response()).text).toBe(nodeBody('{"query":"q","hit":1}'));
      c.write(hit(2) + miss(3) + hit(4));
      expect(texts(await c.responses(3))).toEqual([
        nodeBody('{"query":"q","hit":2}'),
        missBody(3),
        nodeBody('{"query":"q","hit":4}'),
      ]);
      expect(s.door.answered).toBe(0);
      expect(s.offered).toHaveLength(0);
      // node:http reads the socket itself: no InnerSocket in between.
      expect(s.nodeSeen.every((r) => !(r.socket instanceof InnerSocket))).toBe(true);
      // The same, pipelined in one write with the first request (a chunked POST this time).
      const d = await Client.connect(s.port);
      d.write(
        `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` + hit(5) + hit(6),
      );
      expect(texts(await d.responses(3))).toEqual([
        nodeBody('abc'),
        nodeBody('{"query":"q","hit":5}'),
        nodeBody('{"query":"q","hit":6}'),
      ]);
      expect(s.door.answered).toBe(0);
      expect(s.offered).toHaveLength(0);
      // ... while a fresh connection is the door's again.
      const e = await Client.connect(s.port);
      e.write(hit(7));
      expect((await e.response()).text).toBe(doorBody(7));
      expect(s.door.answered).toBe(1);
    });

    it('passes a first request that is no candidate (GET /healthz) to node:http and answers later hits itself', async () => {
      // src/http/front-door.ts (as of this writing): "Any other request is passed to node:http
      // [...]; the connection stays with the door". Only an unsupported head gives it away.
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      c.write(get('/healthz'));
      expect((await c.response()).text).toBe(nodeBody('', 'GET', '/healthz'));
      expect(s.nodeSeen[0]!.socket).toBeInstanceOf(InnerSocket);
      c.write(hit(1));
      expect((await c.response()).text).toBe(doorBody(1));
      c.write(get('/healthz?slow') + hit(2) + get('/x') + hit(3));
      expect(texts(await c.responses(4))).toEqual([
        nodeBody('', 'GET', '/healthz?slow'),
        doorBody(2),
        nodeBody('', 'GET', '/x'),
        doorBody(3),
      ]);
      expect(s.door.answered).toBe(3);
      expect(s.declined).toHaveLength(0);
    });

    it('answers pipelined requests after the client half-closes, then closes', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      c.socket.end(hit(1) + hit(2));
      expect(texts(await c.responses(2))).toEqual([doorBody(1), doorBody(2)]);
      expect(await c.waitClosed(2000)).toBe(true);
      expect(s.door.answered).toBe(2);

      const d = await Client.connect(s.port);
      d.socket.end(hit(3) + post('{"query":"q","miss":"slow"}') + hit(4));
      expect(texts(await d.responses(3))).toEqual([doorBody(3), nodeBody('{"query":"q","miss":"slow"}'), doorBody(4)]);
      expect(await d.waitClosed(2000)).toBe(true);
      expect(s.door.answered).toBe(4);
      const rest = await d.settle(10);
      expect(rest.rest).toBe('');
    });

    it('passes a request whose answer throws or rejects to node:http', async () => {
      const s = await startDoor({ mode });
      const c = await Client.connect(s.port);
      const threw = '{"query":"q","throw":1}';
      const rejected = '{"query":"q","reject":1}';
      c.write(post(threw) + hit(1) + post(rejected) + hit(2));
      expect(texts(await c.responses(4))).toEqual([nodeBody(threw), doorBody(1), nodeBody(rejected), doorBody(2)]);
      expect(s.door.answered).toBe(2);
      expect(s.nodeSeen.map((r) => r.url)).toEqual(['/graphql', '/graphql']);
      expect(s.errors).toHaveLength(2);
      expect(c.closed).toBe(false);
    });

    it('reads 2,000 pipelined hits (with misses among them) without losing or reordering one', async () => {
      const s = await startDoor({ mode, asyncMs: 0 });
      const c = await Client.connect(s.port);
      const n = 2000;
      const body = (i: number) => (i % 97 === 50 ? `{"i":${i},"miss":1}` : `{"i":${i},"hit":1}`);
      c.socket.pause();
      c.write(Array.from({ length: n }, (_, i) => post(body(i))).join(''));
      await sleep(300);
      c.socket.resume();
      const responses = await c.responses(n, 10_000);
      for (let i = 0; i < n; i++) {
        const expected = i % 97 === 50 ? nodeBody(body(i)) : `door:${body(i)}`;
        if (responses[i]!.text !== expected) expect(`#${i}: ${responses[i]!.text}`).toBe(`#${i}: ${expected}`);
      }
      const misses = Array.from({ length: n }, (_, i) => i).filter((i) => i % 97 === 50).length;
      expect(s.door.answered).toBe(n - misses);
      const after = await c.settle(50);
      expect(after.responses).toEqual([]);
      expect(after.rest).toBe('');
    });
  });
}

describe('request smuggling attempts', () => {
  const inner = post('{"query":"q","hit":"smuggled"}');
  const cases: Record<string, string> = {
    'Content-Length and Transfer-Encoding: chunked': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: ${5 + inner.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${inner}`,
    'Transfer-Encoding: chunked and Content-Length': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n${inner}`,
    'two equal Content-Lengths': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 9\r\nContent-Length: 9\r\n\r\n{"hit":1}`,
    'two different Content-Lengths': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: 0\r\nContent-Length: ${inner.length}\r\n\r\n${inner}`,
    'a chunked body followed by a request': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${inner}`,
    'a chunk holding a request': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding: chunked\r\n\r\n${inner.length.toString(16)}\r\n${inner}\r\n0\r\n\r\n${hit('after')}`,
    'Content-Length in an obs-fold': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nX-A: 1\r\n Content-Length: ${inner.length}\r\nContent-Length: 9\r\n\r\n{"hit":1}${inner}`,
    'bare LF line ends': `POST /graphql HTTP/1.1\nHost: ${HOST}\nContent-Length: 9\n\n{"hit":1}${inner}`,
    'a Content-Length with a sign': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nContent-Length: +9\r\n\r\n{"hit":1}${inner}`,
    'a space before the colon': `POST /graphql HTTP/1.1\r\nHost: ${HOST}\r\nTransfer-Encoding : chunked\r\nContent-Length: 9\r\n\r\n{"hit":1}`,
  };

  for (const [name, bytes] of Object.entries(cases)) {
    for (const prefix of ['', 'after a miss']) {
      it(`${name}${prefix ? ` (${prefix})` : ''}: node:http's answer, never the door's`, async () => {
        const s = await startDoor();
        const plainPort = await startPlain();
        const writes = prefix ? [miss('first'), bytes] : [bytes];
        const [viaDoor, plain] = await Promise.all([exchange(s.port, writes, 20), exchange(plainPort, writes, 20)]);
        expect(plain.responses.length).toBeGreaterThan(0);
        expect(viaDoor).toEqual(plain);
        expect(s.door.answered).toBe(0);
        expect(s.offered).toHaveLength(prefix ? 1 : 0);
      });
    }
  }
});

describe('bodies', () => {
  it('passes a POST with a body over the door limit to node:http intact', async () => {
    const s = await startDoor();
    const big = `{"hit":1,"pad":"${'x'.repeat(16385 - 18)}"}`;
    expect(Buffer.byteLength(big)).toBe(16385);
    // In one write, first on its connection.
    const c = await Client.connect(s.port);
    c.write(post(big) + hit(1));
    expect(texts(await c.responses(2))).toEqual([nodeBody(big), doorBody(1)]);
    expect(s.door.answered).toBe(1);
    expect(s.offered.map((r) => r.body)).toEqual(['{"query":"q","hit":1}']);
    // After a miss, the body arriving in pieces (and the next request right behind it).
    const d = await Client.connect(s.port);
    d.write(miss(1));
    expect((await d.response()).text).toBe(missBody(1));
    const request = Buffer.from(post(big) + hit(2));
    for (let at = 0; at < request.length; at += 4000) {
      d.write(request.subarray(at, at + 4000));
      await sleep(5);
    }
    expect(texts(await d.responses(2))).toEqual([nodeBody(big), doorBody(2)]);
    expect(s.door.answered).toBe(2);
    expect(s.nodeSeen.map((r) => r.headers['content-length'])).toEqual(['16385', String(miss(1).length - miss(1).indexOf('\r\n\r\n') - 4), '16385']);
  });

  it('passes the exact bytes of a declined body, split inside a UTF-8 character', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    const body = '{"query":"q","miss":"żółć 🚀 \\u0000 end"}';
    const bytes = Buffer.from(post(body) + hit(1));
    const rocket = bytes.indexOf(Buffer.from('🚀')) + 2;
    c.write(bytes.subarray(0, rocket));
    await sleep(20);
    c.write(bytes.subarray(rocket));
    expect(texts(await c.responses(2))).toEqual([nodeBody(body), doorBody(1)]);
    expect(s.offered[0]!.body).toBe(body);
  });
});

describe('declined', () => {
  it("is called once per declined request, with node:http's IncomingMessage for it", async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    c.write(
      miss(1, 'X-Id: one\r\n') +
        get('/other', 'X-Id: other\r\n') +
        hit(2, 'X-Id: two\r\n') +
        get('/graphql?q=miss&n=3', 'X-Id: three\r\n') +
        post('{"query":"q","throw":4}', 'X-Id: four\r\n'),
    );
    expect(texts(await c.responses(5))).toEqual([
      missBody(1),
      nodeBody('', 'GET', '/other'),
      doorBody(2),
      nodeBody('', 'GET', '/graphql?q=miss&n=3'),
      nodeBody('{"query":"q","throw":4}'),
    ]);
    expect(s.nodeSeen.map((r) => r.headers['x-id'])).toEqual(['one', 'other', 'three', 'four']);
    // The GET /other was never offered to the answer, so it was not declined by it.
    const declinedIds = s.declined.map(({ request }) => request.headers['x-id']);
    expect(declinedIds.filter((id) => id !== 'four')).toEqual(['one', 'three']);
    for (const { request, raw } of s.declined) {
      expect(s.nodeSeen).toContain(raw);
      expect(raw.headers['x-id']).toBe(request.headers['x-id']);
      expect(raw.url).toBe(request.url);
      expect(raw.method).toBe(request.method);
      expect(raw.socket).toBeInstanceOf(InnerSocket);
    }
    expect(new Set(s.declined.map(({ raw }) => raw)).size).toBe(s.declined.length);
    expect(s.declined.filter(({ request }) => request.headers['x-id'] === 'four').length).toBeLessThanOrEqual(1);
  });
});

describe('the client address', () => {
  it('is the real one for a request node:http reads through the InnerSocket, and on a socket given away', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    c.write(miss(1));
    await c.response();
    const raw = s.nodeSeen[0]!;
    expect(raw.socket).toBeInstanceOf(InnerSocket);
    expect(s.addresses[0]).toEqual({ address: '127.0.0.1', port: c.socket.localPort });
    expect(raw.socket.localPort).toBe(s.port);
    // Piped: node:http reads the rest of the connection through the InnerSocket.
    c.write(`GET /piped HTTP/1.0\r\nHost: ${HOST}\r\n\r\n`);
    await c.response();
    expect(s.nodeSeen[1]!.socket).toBe(raw.socket);
    expect(s.addresses[1]).toEqual({ address: '127.0.0.1', port: c.socket.localPort });
    // Given away whole.
    const d = await Client.connect(s.port);
    d.write(`GET /healthz HTTP/1.0\r\nHost: ${HOST}\r\n\r\n`);
    await d.response();
    expect(s.nodeSeen[2]!.socket).not.toBeInstanceOf(InnerSocket);
    expect(s.addresses[2]).toEqual({ address: '127.0.0.1', port: d.socket.localPort });
  });
});

describe('requests node:http handles its own way', () => {
  const body = '{"query":"q","hit":1}';
  // Outside the door's subset (node:http reads the rest: the hit behind it is node's too),
  // or no candidate (passed on alone; a chunked response from node:http in between).
  const cases: Record<string, string> = {
    'HTTP/1.0': `POST /graphql HTTP/1.0\r\nHost: ${HOST}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    'HTTP/1.0 keep-alive': `POST /graphql HTTP/1.0\r\nHost: ${HOST}\r\nConnection: keep-alive\r\nContent-Length: ${body.length}\r\n\r\n${body}${hit(2)}`,
    'Expect: 100-continue': post(body, 'Expect: 100-continue\r\n') + hit(2),
    'Connection: close': post(body, 'Connection: close\r\n'),
    'chunked response from node': get('/chunked?hit'),
    'a head over maxHeaderSize': post(body, `X-Big: ${'b'.repeat(17 * 1024)}\r\n`) + hit(2),
  };
  for (const [name, bytes] of Object.entries(cases)) {
    for (const prefix of ['', 'after a miss']) {
      it(`${name}${prefix ? ` (${prefix})` : ''}: answered by node:http as without the door`, async () => {
        const s = await startDoor();
        const plainPort = await startPlain();
        const writes = prefix ? [miss('first'), bytes] : [bytes];
        const [viaDoor, plain] = await Promise.all([exchange(s.port, writes, 20), exchange(plainPort, writes, 20)]);
        expect(viaDoor).toEqual(plain);
        if (name.includes('maxHeaderSize')) expect(plain.responses.at(-1)).toMatch(/^HTTP\/1\.1 431 /);
        else expect(plain.responses.at(-1)).toMatch(/\r\n\r\nnode:/);
        expect(viaDoor.responses.some((r) => r.includes('door:'))).toBe(false);
        expect(s.door.answered).toBe(0);
      });
    }
  }

  it('Connection: close with more requests behind it: node answers it, closes, and the door answers nothing', async () => {
    for (const prefix of ['', miss('first')]) {
      const s = await startDoor();
      const c = await Client.connect(s.port);
      c.write(prefix + post(body, 'Connection: close\r\n') + hit(2) + hit(3));
      const { responses, closed, rest } = await c.settle();
      expect(closed).toBe(true);
      expect(rest).toBe('');
      // node:http alone would answer 400 to the whole write (llhttp rejects bytes after a close
      // request); the door passes on the close request alone: either way, never a door answer.
      expect(texts(responses)).toEqual([...(prefix ? [missBody('first')] : []), nodeBody(body)]);
      expect(headerOf(responses.at(-1)!, 'connection')).toBe('close');
      expect(s.door.answered).toBe(0);
    }
  });

  it('Expect: 100-continue, body sent after the 100 Continue', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    const request = post(body, 'Expect: 100-continue\r\n');
    const bodyAt = request.indexOf('\r\n\r\n') + 4;
    c.write(request.slice(0, bodyAt));
    const cont = await c.response();
    expect(cont.statusLine).toBe('HTTP/1.1 100 Continue');
    c.write(request.slice(bodyAt));
    expect((await c.response()).text).toBe(nodeBody(body));
    expect(s.door.answered).toBe(0);
  });

  it('a chunked response from node:http between door answers', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    c.write(miss(1) + hit(2) + get('/chunked-slow?x') + hit(3));
    const responses = await c.responses(4);
    expect(texts(responses)).toEqual([missBody(1), doorBody(2), nodeBody('', 'GET', '/chunked-slow?x'), doorBody(3)]);
    expect(headerOf(responses[2]!, 'transfer-encoding')).toBe('chunked');
    expect(s.door.answered).toBe(2);
  });
});

describe('door.close()', () => {
  it('closes an idle door connection promptly; server.close() then completes', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    c.write(hit(1));
    await c.response();
    const d = await Client.connect(s.port);
    d.write(miss(1));
    await d.response();
    const started = Date.now();
    s.door.close();
    expect(await c.waitClosed(1000)).toBe(true);
    expect(await d.waitClosed(1000)).toBe(true);
    expect(c.closedAt - started).toBeLessThan(1000);
    const closing = new Promise<void>((resolve, reject) => s.server.close((err) => (err ? reject(err) : resolve())));
    await expect(Promise.race([closing.then(() => 'closed'), sleep(2000).then(() => 'hung')])).resolves.toBe('closed');
  });

  it('lets a request in flight finish, then closes', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    c.write(post('{"query":"q","miss":"slow"}'));
    await sleep(20);
    s.door.close();
    expect((await c.response()).text).toBe(nodeBody('{"query":"q","miss":"slow"}'));
    expect(await c.waitClosed(1000)).toBe(true);
    // A new connection goes to node:http.
    const d = await Client.connect(s.port);
    d.write(hit(1));
    expect((await d.response()).text).toBe(nodeBody('{"query":"q","hit":1}'));
    expect(s.door.answered).toBe(0);
  });

  it('hands requests still held behind a busy one to node:http, in order', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    c.write(post('{"query":"q","miss":"slow"}') + hit(1) + hit(2));
    await sleep(20);
    s.door.close();
    expect(texts(await c.responses(3))).toEqual([
      nodeBody('{"query":"q","miss":"slow"}'),
      nodeBody('{"query":"q","hit":1}'),
      nodeBody('{"query":"q","hit":2}'),
    ]);
    expect(s.door.answered).toBe(0);
  });

  it('does not cut off a response the door is still writing', async () => {
    const s = await startDoor();
    const c = await Client.connect(s.port);
    const size = 16_000_000;
    c.socket.pause();
    c.write(post(`{"hit":1,"size":${size}}`));
    await sleep(200);
    s.door.close();
    await sleep(100);
    c.socket.resume();
    const res = await c.response(10_000);
    expect(res.body.length).toBe(size);
    expect(s.door.answered).toBe(1);
  });
});

describe('keep-alive expiry', () => {
  it('closes an idle door connection after about keepAliveTimeout + 1 s', async () => {
    const s = await startDoor({ keepAliveTimeout: 200 });
    const c = await Client.connect(s.port);
    c.write(hit(1));
    await c.response();
    const d = await Client.connect(s.port);
    d.write(miss(1));
    await d.response();
    const started = Date.now();
    await sleep(100);
    expect(c.closed).toBe(false);
    expect(d.closed).toBe(false);
    expect(await c.waitClosed(5000)).toBe(true);
    expect(await d.waitClosed(5000)).toBe(true);
    expect(c.closedAt - started).toBeGreaterThanOrEqual(700);
    expect(c.closedAt - started).toBeLessThan(5000);
  });

  it('does not close a connection whose response is still being written (as node:http does not)', async () => {
    const s = await startDoor({ keepAliveTimeout: 200 });
    const plainPort = await startPlain((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r = respond(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(r.status, r.headers);
        res.end(r.body);
      });
    }, 200);
    const size = 16_000_000;
    const run = async (port: number) => {
      const c = await Client.connect(port);
      c.socket.pause();
      c.write(post(`{"hit":1,"size":${size}}`));
      await sleep(3000);
      c.socket.resume();
      try {
        return (await c.response(10_000)).body.length;
      } catch {
        return -1;
      }
    };
    const [viaDoor, plain] = await Promise.all([run(s.port), run(plainPort)]);
    // -1: the connection closed before the whole body arrived.
    expect({ viaDoor, plain }).toEqual({ viaDoor: size, plain: size });
  });
});
