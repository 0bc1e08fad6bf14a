import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Answered, FrontAnswer, FrontRequest, FrontResponse } from './front-door.js';
import { InnerSocket } from './inner-socket.js';
import { parseRequestHead, type RequestHead } from './request-head.js';
import { responseHead } from './response-head.js';

/**
 * One client connection read by the front door (src/http/front-door.ts).
 *
 * Requests are taken strictly one at a time and in order, so responses cannot overtake
 * each other (HTTP/1.1 pipelining): the door answers a request, or passes it to
 * node:http through the connection's `InnerSocket` and waits until node:http has
 * written the whole response before it looks at the next one.
 *
 * The door only splits the byte stream where node:http's parser would split it
 * identically (src/http/request-head.ts accepts a strict subset of HTTP/1.1). At the
 * first request outside that subset, node:http reads the rest of the connection
 * itself: the socket goes to it directly if nothing was passed on yet, or all further
 * bytes flow through the `InnerSocket` unread.
 */

export interface DoorSettings {
  answer: FrontAnswer;
  log: FastifyBaseLogger;
  /** Whether Fastify logs each request (level info or finer): then so does the door. */
  logRequests: boolean;
  /** node:http's keep-alive timeout (`server.keepAliveTimeout`). */
  keepAliveMs: number;
  maxHeaderBytes: number;
}

export interface DoorHooks {
  answered(): void;
  /** False once the server is shutting down. */
  isOpen(): boolean;
  /** Gives a connection (or its inner side) to node:http. */
  toNode(socket: Socket | InnerSocket): void;
  inner(inner: InnerSocket): void;
  /** The door no longer reads this connection. */
  closed(): void;
}

/** Bodies the door reads: cached queries are small; anything larger is passed on unread. */
export const MAX_FRONT_BODY = 16 * 1024;
/** Input held while a request is in flight; beyond it the socket is paused (node:http does the same). */
const MAX_HELD = 64 * 1024;
/** node:http waits a second longer than the Keep-Alive header says, against races with clients. */
const KEEP_ALIVE_GRACE_MS = 1000;

type Mode = 'door' | 'node' | 'piped';

export class FrontConnection {
  private mode: Mode = 'door';
  /** Bytes read and not yet handled, starting at a request's first byte. */
  private held: Buffer | null = null;
  private inner: InnerSocket | null = null;
  /** Body bytes of the passed-on request still to come from the client. */
  private passing = 0;
  /** An answer is being prepared, or node:http has not finished the response to a passed-on request. */
  private busy = false;
  /** The declined request node:http is about to receive, for `FrontAnswer.declined`. */
  private declined: FrontRequest | null = null;
  private clientEnded = false;

  private readonly onData = (chunk: Buffer) => this.receive(chunk);
  private readonly onEnd = () => this.clientEnd();
  private readonly onError = () => this.socket.destroy();
  private readonly onTimeout = () => {
    // node:http's keep-alive expiry. Neither a request in flight nor a response still
    // being written is idle; the timer runs again once the output moves.
    if (this.mode === 'door' && !this.busy && this.socket.writableLength === 0) this.socket.destroy();
  };
  private readonly onDrain = () => {
    if (this.mode !== 'door') return;
    if (this.busy) this.flow();
    else this.next();
  };
  private readonly onClose = () => {
    this.inner?.destroy();
    this.hooks.closed();
  };

  constructor(
    private readonly socket: Socket,
    private readonly settings: DoorSettings,
    private readonly hooks: DoorHooks,
  ) {
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.on('timeout', this.onTimeout);
    socket.on('drain', this.onDrain);
    socket.on('close', this.onClose);
    if (settings.keepAliveMs > 0) socket.setTimeout(settings.keepAliveMs + KEEP_ALIVE_GRACE_MS);
  }

  /** node:http received the request the door passed on: carry over the answer's findings, wait for the response. */
  passedOn(req: IncomingMessage, res: ServerResponse): void {
    const declined = this.declined;
    this.declined = null;
    if (declined !== null) this.settings.answer.declined(declined, req);
    if (this.mode === 'door') res.once('close', () => this.responded());
  }

  /** Server shutdown: an idle connection closes; a busy one closes or goes to node:http when done. */
  shutdown(): void {
    if (this.mode === 'door' && !this.busy) this.next();
  }

  private receive(chunk: Buffer): void {
    if (this.mode === 'piped') {
      if (!this.inner!.feed(chunk)) this.socket.pause();
      return;
    }
    if (this.passing > 0) {
      const length = Math.min(this.passing, chunk.length);
      this.passing -= length;
      const fed = this.inner!.feed(length === chunk.length ? chunk : chunk.subarray(0, length));
      if (!fed) this.socket.pause();
      if (length === chunk.length) return;
      chunk = chunk.subarray(length);
    }
    this.held = this.held === null ? chunk : Buffer.concat([this.held, chunk]);
    if (this.busy) this.flow();
    else this.next();
  }

  private clientEnd(): void {
    this.clientEnded = true;
    if (this.mode === 'piped' || this.passing > 0) this.inner!.push(null);
    else if (!this.busy) this.next();
  }

  /** Handles held requests until one is in flight, one is incomplete, or none is left. */
  private next(): void {
    while (this.mode === 'door' && !this.busy && this.held !== null && !this.socket.writableNeedDrain) {
      if (!this.hooks.isOpen()) return this.release();
      const held = this.held;
      const head = parseRequestHead(held, 0, this.settings.maxHeaderBytes);
      if (head === 'incomplete') break;
      if (head === 'unsupported') return this.release();
      const end = head.bodyStart + head.contentLength;
      if (!isCandidate(head)) {
        this.held = end < held.length ? held.subarray(end) : null;
        this.passOn(held.subarray(0, Math.min(end, held.length)), Math.max(0, end - held.length), null);
        break;
      }
      if (held.length < end) break;
      this.held = end < held.length ? held.subarray(end) : null;
      const body = head.contentLength > 0 ? held.toString('utf8', head.bodyStart, end) : null;
      this.offer({ method: head.method, url: head.url, headers: head.headers, body, socket: this.socket }, held.subarray(0, end));
    }
    if (this.mode !== 'door' || this.busy) return this.flow();
    if (this.held === null && this.clientEnded) this.socket.end();
    // Shutting down: closes once the last response is out.
    else if (this.held === null && !this.hooks.isOpen()) this.socket.destroySoon();
    else this.flow();
  }

  private offer(request: FrontRequest, bytes: Buffer): void {
    const started = this.settings.logRequests ? performance.now() : 0;
    let answered: Answered;
    try {
      answered = this.settings.answer.answer(request);
    } catch (err) {
      answered = Promise.reject(err);
    }
    if (!(answered instanceof Promise)) return this.settle(request, bytes, answered, started);
    this.busy = true;
    answered
      .catch((err: unknown) => {
        // Fastify serves it instead, and answers (and logs) whatever goes wrong there.
        this.settings.log.error({ err }, 'front door failed; passing the request on');
        return undefined;
      })
      .then((response) => {
        this.busy = false;
        if (this.socket.destroyed) return;
        this.settle(request, bytes, response, started);
        this.next();
      })
      .catch((err: unknown) => {
        this.settings.log.error({ err }, 'front door failed to answer');
        this.socket.destroy();
      });
  }

  private settle(request: FrontRequest, bytes: Buffer, response: FrontResponse | undefined, started: number): void {
    if (response === undefined) return this.passOn(bytes, 0, request);
    this.hooks.answered();
    const socket = this.socket;
    socket.cork();
    socket.write(responseHead(response.status, response.headers, this.settings.keepAliveMs), 'latin1');
    socket.write(response.body);
    socket.uncork();
    if (started) this.logCompleted(request, response.status, performance.now() - started);
  }

  /** Passes a request to node:http: `bytes` now, `remaining` more body bytes as they arrive. */
  private passOn(bytes: Buffer, remaining: number, request: FrontRequest | null): void {
    const inner = this.openInner();
    this.busy = true;
    this.declined = request;
    this.passing = remaining;
    if (!inner.feed(bytes)) this.socket.pause();
    if (remaining > 0 && this.clientEnded) inner.push(null);
  }

  /** node:http finished the response to the passed-on request (or the request died). */
  private responded(): void {
    this.busy = false;
    if (this.socket.destroyed || this.socket.writableEnded) return;
    this.next();
  }

  private openInner(): InnerSocket {
    if (this.inner !== null) return this.inner;
    const inner = new InnerSocket(this.socket);
    this.inner = inner;
    this.hooks.inner(inner);
    this.hooks.toNode(inner);
    return inner;
  }

  /** node:http reads the rest of the connection, starting with what the door holds. */
  private release(): void {
    const held = this.held;
    this.held = null;
    this.socket.setTimeout(0);
    // After the client's end, only the inner side can still tell node:http about it.
    if (this.inner !== null || this.clientEnded) {
      const inner = this.openInner();
      this.mode = 'piped';
      inner.delegateTimeouts();
      if (held !== null && !inner.feed(held)) this.socket.pause();
      if (this.clientEnded) inner.push(null);
      return;
    }
    this.mode = 'node';
    const socket = this.socket;
    socket.off('data', this.onData).off('end', this.onEnd).off('error', this.onError);
    socket.off('timeout', this.onTimeout).off('drain', this.onDrain).off('close', this.onClose);
    this.hooks.closed();
    // Node's documented way to give read bytes back: unshift, then let the new owner read.
    socket.pause();
    if (held !== null) socket.unshift(held);
    this.hooks.toNode(socket);
    socket.resume();
  }

  /** Reads on while the client keeps up with its responses and little input is held. */
  private flow(): void {
    if (this.mode !== 'door') return;
    if (this.socket.writableNeedDrain || (this.held !== null && this.held.length > MAX_HELD)) this.socket.pause();
    // While a body is being passed on, node:http's appetite decides (InnerSocket._read).
    else if (this.passing === 0 && this.socket.isPaused()) this.socket.resume();
  }

  /** The line Fastify logs for each request it completes, so request logs stay whole. */
  private logCompleted(request: FrontRequest, statusCode: number, responseTime: number): void {
    const { socket } = request;
    this.settings.log.info(
      {
        // The shape the logger's `req` serializer reads (src/auth/log.ts), which scrubs the URL.
        req: { method: request.method, url: request.url, host: request.headers.host, ip: socket.remoteAddress, socket },
        res: { statusCode },
        responseTime,
        front: true,
      },
      'request completed',
    );
  }
}

/** A request the front answer may take: an anonymous-looking GraphQL read with a small plain body, kept alive. */
function isCandidate(head: RequestHead): boolean {
  const { headers } = head;
  if (headers.host === undefined || headers['content-encoding'] !== undefined) return false;
  if (headers.connection !== undefined && headers.connection.toLowerCase() !== 'keep-alive') return false;
  if (head.method === 'POST') return head.url === '/graphql' && head.contentLength > 0 && head.contentLength <= MAX_FRONT_BODY;
  return head.method === 'GET' && head.contentLength === 0 && head.url.startsWith('/graphql?');
}
