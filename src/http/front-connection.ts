import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Answered, FrontAnswer, FrontRequest, FrontResponse } from './front-door.js';
import { logAnswered } from './front-log.js';
import { parseRequestHead, type RequestHead } from './request-head.js';
import { responseHead } from './response-head.js';

/**
 * A new client connection, read by the front door (src/http/front-door.ts) before
 * node:http: as long as every request on it is a cached query, the door answers each
 * one right off the socket. At the first request it does not answer, node:http gets
 * the socket, with the bytes read so far given back (`unshift`), and reads the rest
 * of the connection itself, natively, exactly as if it had from the start.
 *
 * Requests are answered strictly one at a time, in order (HTTP/1.1 pipelining), and
 * the door only ever splits the byte stream where node:http's parser would split it
 * too: src/http/request-head.ts accepts a strict subset of HTTP/1.1 and calls anything
 * else unsupported, which goes to node:http whole.
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
  /**
   * node:http reads the connection from here on. `declined`: the request at the start
   * of what was read, which the answer has seen (and counted) already.
   */
  toNode(socket: Socket, declined: FrontRequest | undefined): void;
  /** The door no longer reads this connection. */
  closed(): void;
}

/** Bodies the door reads: cached queries are small. */
export const MAX_FRONT_BODY = 16 * 1024;
/** Input held while an answer is in flight; beyond it the socket is paused (node:http does the same). */
const MAX_HELD = 64 * 1024;
/** node:http waits a second longer than the Keep-Alive header says, against races with clients. */
const KEEP_ALIVE_GRACE_MS = 1000;

export class FrontConnection {
  private reading = true;
  /** Bytes read and not yet answered, from the first byte of a request. */
  private held: Buffer | null = null;
  /** An answer is being prepared (it waits on Redis). */
  private busy = false;
  private clientEnded = false;

  private readonly onData = (chunk: Buffer) => {
    this.held = this.held === null ? chunk : Buffer.concat([this.held, chunk]);
    if (this.busy) this.flow();
    else this.next();
  };
  private readonly onEnd = () => {
    this.clientEnded = true;
    if (!this.busy) this.next();
  };
  private readonly onError = () => this.socket.destroy();
  private readonly onTimeout = () => {
    // node:http's keep-alive expiry. Neither an answer in flight nor a response still
    // being written is idle; the timer runs again once the output moves.
    if (!this.busy && this.socket.writableLength === 0) this.socket.destroy();
  };
  private readonly onDrain = () => {
    if (!this.busy) this.next();
  };
  private readonly onClose = () => this.hooks.closed();

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

  /** Server shutdown: an idle connection closes; a busy one once its answer is out. */
  shutdown(): void {
    if (this.reading && !this.busy) this.next();
  }

  /** Answers held requests until one is not the door's, one is incomplete, or none is left. */
  private next(): void {
    while (this.reading && !this.busy && this.held !== null && !this.socket.writableNeedDrain) {
      if (!this.hooks.isOpen()) return this.release(undefined);
      const held = this.held;
      const head = parseRequestHead(held, 0, this.settings.maxHeaderBytes);
      if (head === 'incomplete') break;
      if (head === 'unsupported' || !isCandidate(head)) return this.release(undefined);
      const end = head.bodyStart + head.contentLength;
      if (held.length < end) break;
      const body = head.contentLength > 0 ? held.toString('utf8', head.bodyStart, end) : null;
      this.offer({ method: head.method, url: head.url, headers: head.headers, body, socket: this.socket }, end);
    }
    if (!this.reading || this.busy) return;
    // The client is done sending: what is answered is out, a partial request is dropped.
    if (this.clientEnded) this.socket.end();
    // Shutting down: closes once the last response is out.
    else if (this.held === null && !this.hooks.isOpen()) this.socket.destroySoon();
    else this.flow();
  }

  /** Offers the held request that ends at `end`. */
  private offer(request: FrontRequest, end: number): void {
    const started = this.settings.logRequests ? performance.now() : 0;
    let answered: Answered;
    try {
      answered = this.settings.answer.answer(request);
    } catch (err) {
      answered = Promise.reject(err);
    }
    if (!(answered instanceof Promise)) return this.settle(request, end, answered, started);
    this.busy = true;
    answered
      .catch((err: unknown) => {
        // node:http and Fastify serve it instead, and answer (and log) whatever goes wrong there.
        this.settings.log.error({ err }, 'front door failed; passing the request on');
        return undefined;
      })
      .then((response) => {
        this.busy = false;
        if (this.socket.destroyed) return;
        this.settle(request, end, response, started);
        this.next();
      })
      .catch((err: unknown) => {
        this.settings.log.error({ err }, 'front door failed to answer');
        this.socket.destroy();
      });
  }

  private settle(request: FrontRequest, end: number, response: FrontResponse | undefined, started: number): void {
    if (response === undefined) return this.release(request);
    const held = this.held!;
    this.held = end < held.length ? held.subarray(end) : null;
    this.hooks.answered();
    const socket = this.socket;
    socket.cork();
    socket.write(responseHead(response.status, response.headers, this.settings.keepAliveMs), 'latin1');
    socket.write(response.body);
    socket.uncork();
    if (started) logAnswered(this.settings.log, { ...request, host: request.headers.host }, response.status, performance.now() - started);
  }

  /** node:http reads the rest of the connection, starting with what the door holds. */
  private release(declined: FrontRequest | undefined): void {
    this.reading = false;
    const socket = this.socket;
    socket.off('data', this.onData).off('end', this.onEnd).off('error', this.onError);
    socket.off('timeout', this.onTimeout).off('drain', this.onDrain).off('close', this.onClose);
    socket.setTimeout(0);
    this.hooks.closed();
    // A client that has half-closed while its answer was in flight: node:http, too,
    // ends such a connection without answering what is still pending.
    if (this.clientEnded) {
      socket.on('error', this.onError);
      socket.end();
      return;
    }
    // Node's documented way to give bytes back: unshift them, then let the new owner read.
    socket.pause();
    if (this.held !== null) socket.unshift(this.held);
    this.held = null;
    this.hooks.toNode(socket, declined);
    socket.resume();
  }

  /** Reads on while the client keeps up with its responses and little input is held. */
  private flow(): void {
    if (this.socket.writableNeedDrain || (this.held !== null && this.held.length > MAX_HELD)) this.socket.pause();
    else if (this.socket.isPaused()) this.socket.resume();
  }
}

/** A request the front answer may take: a GraphQL read with a small plain body, on a kept-alive connection. */
function isCandidate(head: RequestHead): boolean {
  const { headers } = head;
  if (headers['content-encoding'] !== undefined) return false;
  if (headers.connection !== undefined && headers.connection.toLowerCase() !== 'keep-alive') return false;
  if (head.method === 'POST') return head.url === '/graphql' && head.contentLength > 0 && head.contentLength <= MAX_FRONT_BODY;
  return head.method === 'GET' && head.contentLength === 0 && head.url.startsWith('/graphql?');
}
