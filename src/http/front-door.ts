import { createServer, maxHeaderSize, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { FrontConnection, MAX_FRONT_BODY, type DoorSettings } from './front-connection.js';
import { logAnswered } from './front-log.js';

/**
 * The front door of the HTTP server. Most traffic of a read-mostly API is the same few
 * anonymous queries, answered from the response cache; for those, node:http's request
 * and response objects, let alone Fastify's, cost more than the answer. The door is
 * installed through Fastify's `serverFactory` and has two readers:
 *
 * - Each new connection is read off the socket by a `FrontConnection`
 *   (src/http/front-connection.ts), which answers cached queries without node:http at
 *   all. At the first request it does not answer, it gives the socket to node:http.
 * - On a connection node:http reads, each request still passes the door first: a
 *   `GET`/`POST /graphql` is offered to the same answer before Fastify sees it. A body
 *   read here is replayed to Fastify by the route's `preParsing` hook (`replayedBody`).
 *
 * What may be answered, and how, is the `FrontAnswer`'s business
 * (src/graphql/front-answer.ts); everything it declines goes to Fastify unchanged.
 */

export interface FrontRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string | null;
  /** The client's connection: its address is the client's unless a trusted proxy says otherwise. */
  socket: Socket;
}

export interface FrontResponse {
  status: number;
  /** Complete, `content-length` included: written as they are, in this order. */
  headers: Record<string, string | number>;
  body: Buffer;
}

/** A response, or undefined to decline; a promise of either when it must wait. */
export type Answered = FrontResponse | undefined | Promise<FrontResponse | undefined>;

export interface FrontAnswer {
  /** Answers a request — synchronously when it can, which is what makes the door cheap. */
  answer(request: FrontRequest): Answered;
  /** A request it declined goes to Fastify as `raw`: whatever answering it learnt goes along. */
  declined(request: FrontRequest, raw: IncomingMessage): void;
}

type FastifyHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The server options Fastify hands its `serverFactory` (what it would apply itself). */
interface ServerFactoryOptions {
  http?: ServerOptions;
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

const bodies = new WeakMap<IncomingMessage, Buffer>();

/** The body the door read before declining, as a stream for Fastify's parser. */
export function replayedBody(raw: IncomingMessage): Readable | undefined {
  const body = bodies.get(raw);
  if (body === undefined) return undefined;
  bodies.delete(raw);
  const stream = new PassThrough();
  stream.end(body);
  return stream;
}

export class FrontDoor {
  private settings: DoorSettings | undefined;
  private server: Server | undefined;
  private maxHeaderBytes = maxHeaderSize;
  /** node:http's own reader of a new connection, which the door calls when it gives one away. */
  private toNode: ((socket: Socket) => void) | undefined;
  /** Connections a `FrontConnection` is reading. */
  private readonly connections = new Set<FrontConnection>();
  /** A request the connection reader declined as it gave the socket away: node:http's first on it. */
  private readonly declinedOn = new WeakMap<Socket, { request: FrontRequest; answer: FrontAnswer }>();
  /** Requests answered here, by either reader; tests read it to know the door answered. */
  answered = 0;
  /** Of those, the ones answered off the socket, before node:http read them. */
  answeredBeforeNode = 0;

  /** For `Fastify({ serverFactory })`: the server Fastify would create, with this door in front. */
  readonly serverFactory = (fastify: FastifyHandler, options: ServerFactoryOptions): Server => {
    const server = createServer(options.http ?? {}, (req, res) => this.receive(req, res, fastify));
    // What Fastify sets on the server it creates itself (lib/server.js).
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;

    // The door takes node:http's place as the reader of new connections.
    const [nodeReader] = server.listeners('connection') as ((socket: Socket) => void)[];
    if (nodeReader === undefined) throw new Error('node:http registered no connection listener');
    server.removeListener('connection', nodeReader);
    this.toNode = (socket) => nodeReader.call(server, socket);
    server.on('connection', (socket: Socket) => this.accept(socket));
    this.server = server;
    this.maxHeaderBytes = options.http?.maxHeaderSize ?? maxHeaderSize;
    return server;
  };

  /** Starts answering (after the app is ready); until then every request goes to Fastify. */
  open(answer: FrontAnswer, log: FastifyBaseLogger): void {
    if (this.server === undefined) throw new Error('the front door opens on the server it made');
    this.settings = {
      answer,
      log,
      logRequests: ['info', 'debug', 'trace'].includes(log.level),
      keepAliveMs: this.server.keepAliveTimeout,
      maxHeaderBytes: this.maxHeaderBytes,
    };
  }

  /**
   * Stops answering (shutdown): Fastify then refuses new requests with 503 itself.
   * Connections a `FrontConnection` reads close once idle, or go to node:http with the
   * requests they hold.
   */
  close(): void {
    this.settings = undefined;
    for (const connection of this.connections) connection.shutdown();
  }

  private accept(socket: Socket): void {
    const settings = this.settings;
    // Counting requests per socket is node:http's business: with a limit, it reads them all.
    if (settings === undefined || this.server?.maxRequestsPerSocket) return this.toNode!(socket);
    const connection = new FrontConnection(socket, settings, {
      answered: () => {
        this.answered++;
        this.answeredBeforeNode++;
      },
      isOpen: () => this.settings !== undefined,
      toNode: (given, declined) => {
        if (declined !== undefined) this.declinedOn.set(given, { request: declined, answer: settings.answer });
        this.toNode!(given);
      },
      closed: () => this.connections.delete(connection),
    });
    this.connections.add(connection);
  }

  private receive(req: IncomingMessage, res: ServerResponse, fastify: FastifyHandler): void {
    const declined = this.declinedOn.get(req.socket);
    if (declined !== undefined) {
      // Offered (and counted) already, by the connection reader — even if the door has
      // closed since: straight to the route, with what the answer learnt.
      this.declinedOn.delete(req.socket);
      declined.answer.declined(declined.request, req);
      return fastify(req, res);
    }
    const settings = this.settings;
    if (settings === undefined) return fastify(req, res);
    const { method, url = '' } = req;
    if (method === 'GET' && url.startsWith('/graphql?')) return this.offer(settings, req, res, null, fastify);
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
      this.offer(settings, req, res, body, fastify);
    });
  }

  private offer(settings: DoorSettings, req: IncomingMessage, res: ServerResponse, body: Buffer | null, fastify: FastifyHandler): void {
    const started = settings.logRequests ? performance.now() : 0;
    const request: FrontRequest = { method: req.method!, url: req.url!, headers: req.headers, body: body?.toString('utf8') ?? null, socket: req.socket };
    let answered: Answered;
    try {
      answered = settings.answer.answer(request);
    } catch (err) {
      answered = Promise.reject(err);
    }
    const finish = (response: FrontResponse | undefined) => {
      if (response === undefined) {
        settings.answer.declined(request, req);
        if (body !== null) bodies.set(req, body);
        return fastify(req, res);
      }
      // The client (or a parse error further on) may have ended the connection meanwhile.
      if (res.destroyed) return;
      this.answered++;
      res.writeHead(response.status, response.headers);
      res.end(response.body);
      if (started) logAnswered(settings.log, { ...request, host: req.headers.host }, response.status, performance.now() - started);
    };
    if (!(answered instanceof Promise)) return finish(answered);
    answered
      .catch((err: unknown) => {
        // Fastify serves it instead, and answers (and logs) whatever goes wrong there.
        settings.log.error({ err }, 'front door failed; handing the request to the router');
        return undefined;
      })
      .then(finish)
      .catch((err: unknown) => {
        settings.log.error({ err }, 'front door failed to answer');
        res.destroy();
      });
  }
}

/** A body the door may read: framed by Content-Length, small, not encoded. */
function hasSmallPlainBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length === undefined || req.headers['transfer-encoding'] !== undefined || req.headers['content-encoding'] !== undefined) return false;
  const bytes = Number(length);
  return bytes > 0 && bytes <= MAX_FRONT_BODY;
}
