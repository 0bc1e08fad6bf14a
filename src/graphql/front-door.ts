import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import type { RawGraphQLRequest } from './request-params.js';

/**
 * The front door of the HTTP server. Most traffic of a read-mostly API is the same few
 * anonymous queries, answered from the response cache; taking such a request through
 * Fastify's routing, hooks, reply and logger objects costs twice what the answer does.
 * The front door, installed through Fastify's `serverFactory`, sees every request
 * first: a GET or POST to exactly `/graphql` is offered to the `FrontAnswer` (see
 * src/graphql/front-answer.ts); anything it declines — and every other request — goes
 * to Fastify unchanged. A POST body read here is replayed to Fastify by the route's
 * `preParsing` hook (`replayedBody`), so nothing is lost or read twice.
 */

export interface FrontRequest extends RawGraphQLRequest {
  raw: IncomingMessage;
}

export interface FrontResponse {
  status: number;
  /** Complete, `content-length` included: written as they are. */
  headers: OutgoingHttpHeaders;
  body: Buffer;
}

/** A response, or undefined to decline (Fastify then serves the request); a promise of either when it must wait. */
export type Answered = FrontResponse | undefined | Promise<FrontResponse | undefined>;

/** Answers a request — synchronously when it can, which is what makes the front door cheap. */
export type FrontAnswer = (request: FrontRequest) => Answered;

type FastifyHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The server options Fastify hands its `serverFactory` (what it would apply itself). */
interface ServerFactoryOptions {
  http?: ServerOptions;
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

/** Bodies larger than this go to Fastify unread: cached queries are small. */
const MAX_FRONT_BODY = 16 * 1024;

const bodies = new WeakMap<IncomingMessage, Buffer>();

/** The body the front door read before declining, as a stream for Fastify's parser. */
export function replayedBody(raw: IncomingMessage): Readable | undefined {
  const body = bodies.get(raw);
  if (body === undefined) return undefined;
  bodies.delete(raw);
  const stream = new PassThrough();
  stream.end(body);
  return stream;
}

export class FrontDoor {
  private answer: FrontAnswer | undefined;
  private log: FastifyBaseLogger | undefined;
  /** Whether Fastify logs each request (level info or finer): then so does the front door. */
  private logRequests = false;
  /** Requests answered here; tests read it to know the front door was taken. */
  answered = 0;

  /** Starts answering (after the app is ready); until then every request goes to Fastify. */
  open(answer: FrontAnswer, log: FastifyBaseLogger): void {
    this.answer = answer;
    this.log = log;
    this.logRequests = ['info', 'debug', 'trace'].includes(log.level);
  }

  /** Stops answering (shutdown): Fastify then refuses new requests with 503 itself. */
  close(): void {
    this.answer = undefined;
  }

  /** For `Fastify({ serverFactory })`: the server Fastify would create, with this door in front. */
  readonly serverFactory = (fastify: FastifyHandler, options: ServerFactoryOptions): Server => {
    const server = createServer(options.http ?? {}, (req, res) => this.receive(req, res, fastify));
    // What Fastify sets on the server it creates itself (lib/server.js).
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    return server;
  };

  private receive(req: IncomingMessage, res: ServerResponse, fastify: FastifyHandler): void {
    const answer = this.answer;
    if (answer === undefined) return fastify(req, res);
    const { method, url = '' } = req;
    if (method === 'GET' && url.startsWith('/graphql?')) {
      this.offer(answer, req, res, null, fastify);
      return;
    }
    if (method !== 'POST' || url !== '/graphql' || !hasSmallPlainBody(req)) return fastify(req, res);
    const chunks: Buffer[] = [];
    let length = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      length += chunk.length;
    });
    // No 'error' listener on purpose: an aborted upload then just never ends (Node emits
    // no error without a listener), and there is nobody left to answer.
    req.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
      this.offer(answer, req, res, body, fastify);
    });
  }

  private offer(answer: FrontAnswer, req: IncomingMessage, res: ServerResponse, body: Buffer | null, fastify: FastifyHandler): void {
    const started = this.logRequests ? performance.now() : 0;
    let answered: Answered;
    try {
      answered = answer({ method: req.method!, url: req.url!, headers: req.headers, body: body?.toString('utf8') ?? null, raw: req });
    } catch (err) {
      answered = Promise.reject(err);
    }
    if (answered instanceof Promise) {
      answered.then(
        (response) => this.finish(req, res, body, fastify, response, started),
        (err: unknown) => {
          // Fastify serves it instead, and answers (and logs) whatever goes wrong there.
          this.log?.error({ err }, 'front door failed; handing the request to the router');
          this.finish(req, res, body, fastify, undefined, started);
        },
      )
      .catch((err: unknown) => {
        this.log?.error({ err }, 'front door failed to answer');
        res.destroy();
      });
    } else {
      this.finish(req, res, body, fastify, answered, started);
    }
  }

  private finish(req: IncomingMessage, res: ServerResponse, body: Buffer | null, fastify: FastifyHandler, response: FrontResponse | undefined, started: number): void {
    if (response === undefined) {
      if (body !== null) bodies.set(req, body);
      return fastify(req, res);
    }
    this.answered++;
    res.writeHead(response.status, response.headers);
    res.end(response.body);
    if (started) this.logCompleted(req, response.status, performance.now() - started);
  }

  /** The line Fastify logs for each request it completes, so request logs stay whole. */
  private logCompleted(req: IncomingMessage, statusCode: number, responseTime: number): void {
    this.log?.info(
      {
        // The shape the logger's `req` serializer reads (src/auth/log.ts), which scrubs the URL.
        req: { method: req.method, url: req.url, host: req.headers.host, ip: req.socket.remoteAddress, socket: req.socket },
        res: { statusCode },
        responseTime,
        front: true,
      },
      'request completed',
    );
  }
}

/** A body the front door may read: framed by Content-Length, small, not encoded. */
function hasSmallPlainBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length === undefined || req.headers['transfer-encoding'] !== undefined || req.headers['content-encoding'] !== undefined) return false;
  const bytes = Number(length);
  return bytes > 0 && bytes <= MAX_FRONT_BODY;
}
