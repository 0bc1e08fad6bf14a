import { createServer, maxHeaderSize, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { FrontConnection, type DoorSettings } from './front-connection.js';
import { InnerSocket } from './inner-socket.js';

/**
 * The front door of the HTTP server. Most traffic of a read-mostly API is the same few
 * anonymous queries, answered from the response cache; for those, node:http's own
 * request and response objects, let alone Fastify's, cost more than the answer.
 *
 * So the door, installed through Fastify's `serverFactory`, reads each new connection
 * itself (src/http/front-connection.ts). A request it fully understands and whose
 * answer the `FrontAnswer` has ready (src/graphql/front-answer.ts) is answered right
 * there. Any other request is passed to node:http, byte for byte, and from there to
 * Fastify as usual; the connection stays with the door, so its next cached request is
 * answered at the door again. Only a request outside the strict subset of HTTP/1.1 the
 * door reads (src/http/request-head.ts) — a WebSocket upgrade, a chunked body, HTTP/1.0
 * — makes node:http read the rest of that connection itself.
 */

export interface FrontRequest {
  method: string;
  url: string;
  /** Lower-case names, each once (the door passes on a request that repeats one). */
  headers: Record<string, string>;
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

/** A response, or undefined to pass the request on; a promise of either when it must wait. */
export type Answered = FrontResponse | undefined | Promise<FrontResponse | undefined>;

export interface FrontAnswer {
  /** Answers a request — synchronously when it can, which is what makes the door cheap. */
  answer(request: FrontRequest): Answered;
  /** A request it declined reached node:http as `raw`: whatever answering it learnt goes along. */
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

export class FrontDoor {
  private settings: DoorSettings | undefined;
  /** node:http's reader of a new connection, which the door calls when it gives one away. */
  private toNode: ((socket: Socket | InnerSocket) => void) | undefined;
  /** Connections the door is reading. */
  private readonly connections = new Set<FrontConnection>();
  private readonly owners = new WeakMap<InnerSocket, FrontConnection>();
  private server: Server | undefined;
  private maxHeaderBytes = maxHeaderSize;
  /** Requests answered here; tests read it to know the door answered. */
  answered = 0;

  /** For `Fastify({ serverFactory })`: the server Fastify would create, with this door in front. */
  readonly serverFactory = (fastify: FastifyHandler, options: ServerFactoryOptions): Server => {
    const server = createServer(options.http ?? {}, (req, res) => {
      if (req.socket instanceof InnerSocket) this.owners.get(req.socket)?.passedOn(req, res);
      fastify(req, res);
    });
    // What Fastify sets on the server it creates itself (lib/server.js).
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if (options.maxRequestsPerSocket) server.maxRequestsPerSocket = options.maxRequestsPerSocket;

    // The door takes node:http's place as the reader of new connections.
    const [nodeReader] = server.listeners('connection') as ((socket: Socket | InnerSocket) => void)[];
    if (nodeReader === undefined) throw new Error('node:http registered no connection listener');
    server.removeListener('connection', nodeReader);
    this.toNode = (socket) => nodeReader.call(server, socket);
    server.on('connection', (socket: Socket) => this.accept(socket));
    this.server = server;
    this.maxHeaderBytes = options.http?.maxHeaderSize ?? maxHeaderSize;
    return server;
  };

  /** Starts answering (after the app is ready); until then every connection goes to node:http. */
  open(answer: FrontAnswer, log: FastifyBaseLogger): void {
    const server = this.server;
    // Counting requests per socket is node:http's business: with a limit, it keeps every connection.
    if (server === undefined || server.maxRequestsPerSocket) return;
    this.settings = {
      answer,
      log,
      logRequests: ['info', 'debug', 'trace'].includes(log.level),
      keepAliveMs: server.keepAliveTimeout,
      maxHeaderBytes: this.maxHeaderBytes,
    };
  }

  /**
   * Stops answering (shutdown). Idle connections close now; one with a request in
   * flight gives the rest of itself to node:http afterwards, where Fastify, closing,
   * answers any further request with 503 and closes it.
   */
  close(): void {
    this.settings = undefined;
    for (const connection of this.connections) connection.shutdown();
  }

  private accept(socket: Socket): void {
    const settings = this.settings;
    if (settings === undefined) return this.toNode!(socket);
    const connection = new FrontConnection(socket, settings, {
      answered: () => this.answered++,
      isOpen: () => this.settings !== undefined,
      toNode: (readable) => this.toNode!(readable),
      inner: (inner) => this.owners.set(inner, connection),
      closed: () => this.connections.delete(connection),
    });
    this.connections.add(connection);
  }
}
