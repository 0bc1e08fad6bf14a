import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  GraphQLError,
  type ExecutionArgs,
  type ExecutionResult,
  type GraphQLFormattedError,
} from 'graphql';
import { CloseCode, handleProtocols, makeServer, type SubscribePayload } from 'graphql-ws';
import { WebSocket, WebSocketServer, type ServerOptions } from 'ws';
import type { Credential, Identity } from '../../auth/caller.js';
import type { Services } from '../../domain/services.js';
import type { RequestCore } from '../operation/core.js';
import { carryingCost, costJson, keepingCost } from '../operation/cost-report.js';
import { RequestError, TooManySubscriptions, Unauthenticated, formatError, type FormatOptions } from '../operation/errors.js';
import type { OperationPipeline } from '../operation/pipeline.js';
import type { CorsPolicy } from '../../http/cors.js';
import type { ConnectionCaps } from '../../http/connection-caps.js';
import { hasDuplicateHost } from '../../http/hygiene.js';
import { HTTP_REFUSALS, refusalBody } from '../../errors.js';
import { refuse } from './refuse.js';
import { cookieToken, clientIp, credentialFromParams } from './auth.js';
import { FanoutHub, type SubscriptionRequest } from './fanout.js';
import { WS_CLOSE, WS_LIMITS, WS_PATH, nextMessage } from './protocol.js';
import type { WsObserver } from '../../observability/ws.js';

/**
 * The WebSocket adapter: graphql-transport-ws at /graphql (docs/subscriptions.md).
 * graphql-ws's protocol core (`makeServer`) runs the protocol; this file is its transport
 * over `ws`, with the same preparation and error formatter as HTTP and the per-connection
 * limits. Why not `graphql-ws/use/ws`: docs/design-notes.md#websocket-transport.
 */

export interface WsLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface GraphqlWsOptions {
  pipeline: OperationPipeline;
  /** Queries, mutations and subscriptions go through the request core, as over HTTP. */
  core: RequestCore;
  /** For the fan-out's executions of subscription events. */
  services: Services;
  isProduction: boolean;
  log: WsLogger;
  /** `PUBLIC_URL`: pages of this origin (or the request's own host) may authenticate by cookie. */
  publicUrl: string;
  /** The CORS allow-list: its pages may authenticate by cookie too (src/http/cors.ts). */
  cors: CorsPolicy;
  /** Take the client address from X-Forwarded-For (as Fastify's `trustProxy`). */
  trustProxy: boolean;
  /**
   * Who presents a credential (from `connection_init`'s `authorization: "Bearer …"`, else
   * the `auth-token` cookie of the upgrade): anonymous without one, `rejected` when it is
   * refused (closed 4403). Called for every operation, so a revoked session or a changed
   * role takes effect at the next subscribe, as HTTP re-reads the caller per request.
   */
  identify(credential: Credential | undefined): Promise<Identity>;
  /** Metrics and a log line per operation (src/observability/ws.ts). */
  observability?: WsObserver;
  /**
   * Open connections per client address and per instance, shared with the other
   * long-lived transports (src/http/connection-caps.ts): over a cap the upgrade answers
   * 429 or 503 with `Retry-After`. A place is held from the upgrade until the socket closes.
   */
  caps?: ConnectionCaps;
  /** True while the process sheds new requests (src/http/overload.ts): new sockets get 503 too. */
  overloaded?(): boolean;
}

export interface GraphqlWsServer {
  /** Open sockets, subscription groups, live subscribers, and sockets closed for not reading. */
  stats(): { connections: number; groups: number; subscribers: number; slowConsumersClosed: number };
  /** Refuses new sockets, finishes in-flight sends, closes every socket with 1001 and waits (bounded). */
  close(): Promise<void>;
}

/** Per socket. Deliberately small: thousands of these stay open. */
interface Connection {
  readonly socket: WebSocket;
  readonly ip: string;
  /** The `auth-token` cookie's value, when the upgrade may authenticate by cookie. */
  readonly cookieToken: string | undefined;
  /** Chosen at `connection_init`. */
  credential: Credential | undefined;
  /** Active subscription operations, by their subscribe payload (ids may be reused after complete). */
  readonly subscriptions: Set<SubscribePayload>;
  /** Answered the last keep-alive ping. */
  alive: boolean;
  /** Aborted when the socket closes; made only for a heavy operation (`closedSignal`). */
  closed?: AbortController;
}

/**
 * What `onSubscribe` hands graphql-ws as the operation's context: a query or mutation the
 * core has answered (its `next` already written), or a subscription for the fan-out hub.
 */
type Run = { readonly answered: true } | { readonly subscription: SubscriptionRequest<Connection> };

/** graphql-ws keeps the context we give it as `unknown`: ours is always a Run. */
const runOf = (args: ExecutionArgs): Run => args.contextValue as Run;

/** Nothing more to send: graphql-ws completes the operation (its `next` went out already). */
async function* answered(): AsyncGenerator<ExecutionResult> {}

export function attachGraphqlWs(httpServer: Server, options: GraphqlWsOptions): GraphqlWsServer {
  const { pipeline, core, services, log } = options;
  const connections = new Map<WebSocket, Connection>();
  let accepting = true;
  let closing: Promise<void> | undefined;
  let slowConsumersClosed = 0;

  const format: FormatOptions = {
    isProduction: options.isProduction,
    onInternal: (error) => log.error({ err: error }, 'unexpected error in a WebSocket operation'),
    onCode: options.observability?.graphqlError, // observability:
  };
  const formatAll = (errors: readonly GraphQLError[]): GraphQLFormattedError[] => errors.map((e) => keepingCost(e, formatError(e, format)));

  /** Every message to a client goes through here: a subscriber that stopped reading is closed, not buffered for. */
  const send = (connection: Connection, data: string | Buffer): void => {
    const { socket } = connection;
    if (socket.readyState !== WebSocket.OPEN) return;
    if (socket.bufferedAmount > WS_LIMITS.maxBufferedBytes) {
      slowConsumersClosed++;
      log.warn({ ip: connection.ip, buffered: socket.bufferedAmount }, 'closing a WebSocket that stopped reading');
      socket.close(WS_CLOSE.TryAgainLater, 'Slow consumer');
      return;
    }
    socket.send(data, { binary: false });
  };

  const hub = new FanoutHub<Connection>({ schema: pipeline.schema, services, format, write: send });

  const protocol = makeServer<Record<string, unknown>, Connection>({
    schema: pipeline.schema,
    connectionInitWaitTimeout: WS_LIMITS.connectionInitWaitMs,

    // A refused credential answers `false`: graphql-ws closes the socket with 4403.
    onConnect: async (ctx) => {
      ctx.extra.credential = credentialFromParams(ctx.connectionParams, ctx.extra.cookieToken);
      return !(await options.identify(ctx.extra.credential)).rejected;
    },

    onSubscribe: async (ctx, id, payload) => {
      options.observability?.start(payload); // observability:
      try {
        return await startOperation(ctx.extra, id, payload, () => id in ctx.subscriptions);
      } catch (error) {
        const refusal = error instanceof RequestError ? error : undefined;
        options.observability?.refused(payload, refusal?.status ?? 500); // observability:
        return refusal?.errors ?? [new GraphQLError('Internal server error', { originalError: error as Error })];
      }
    },

    execute: (args) => {
      if (!('answered' in runOf(args))) throw new Error('a subscription reached execute');
      return answered();
    },

    subscribe: (args) => {
      const run = runOf(args);
      if (!('subscription' in run)) throw new Error('a query reached subscribe');
      return hub.subscribe(run.subscription);
    },

    // A subscription that could not start (a resolver error) answers one result: formatted here.
    onNext: (_ctx, _id, _payload, _args, result) => (result.errors ? { ...result, errors: formatAll(result.errors) } : undefined),

    onError: (_ctx, _id, _payload, errors) => formatAll(errors),

    onComplete: (ctx, _id, payload) => {
      ctx.extra.subscriptions.delete(payload);
    },
  });

  /**
   * One operation through the request core (src/graphql/operation/core.ts), as over HTTP.
   * A query's or mutation's answer is written here as it is, inside its `next` message;
   * a refusal goes back to graphql-ws as an `error`; a subscription joins the fan-out.
   */
  async function startOperation(
    connection: Connection,
    id: string,
    payload: SubscribePayload,
    stillWanted: () => boolean,
  ): Promise<ExecutionArgs | readonly GraphQLError[]> {
    // A refusal is observed with the status HTTP would have answered.
    const refuse = (status: number, errors: readonly GraphQLError[]) => {
      options.observability?.refused(payload, status); // observability:
      return errors;
    };
    const identity = await options.identify(connection.credential);
    if (identity.rejected) {
      // The session was revoked (or the token expired) since connection_init.
      connection.socket.close(CloseCode.Forbidden, 'Forbidden');
      const refusal = new Unauthenticated();
      return refuse(refusal.status, refusal.errors);
    }
    const { caller } = identity;
    const answer = await core.serve({
      caller,
      ip: connection.ip,
      transport: 'ws',
      format,
      readParams: () => ({
        query: payload.query,
        variables: payload.variables ?? undefined,
        operationName: payload.operationName ?? undefined,
        extensions: payload.extensions ?? undefined,
      }),
      signal: () => closedSignal(connection),
    });
    if (answer.kind === 'refused') return refuse(answer.status, answer.cost ? answer.errors.map((e) => carryingCost(e, answer.cost!)) : answer.errors);
    const { operation } = answer;
    const args = { schema: pipeline.schema, document: operation!.document, operationName: operation!.operationName, variableValues: payload.variables };
    options.observability?.executed(payload, operation!, caller); // observability: executed or subscribed
    if (answer.kind === 'result') {
      // The client may have completed it meanwhile: then nothing is sent.
      if (stillWanted()) send(connection, nextMessage(id, answer.body.toString()));
      return { ...args, contextValue: { answered: true } satisfies Run };
    }
    // Checked and counted after the last await, so concurrent subscribes cannot both pass at 100.
    if (connection.subscriptions.size >= WS_LIMITS.maxSubscriptions) {
      const refusal = new TooManySubscriptions(WS_LIMITS.maxSubscriptions);
      return refuse(refusal.status, refusal.errors);
    }
    connection.subscriptions.add(payload);
    const subscription: SubscriptionRequest<Connection> = {
      prepared: answer.prepared.operation,
      variables: answer.variables,
      variablesKey: answer.variablesKey,
      caller,
      subscriber: { connection, id, cost: answer.cost && costJson(answer.cost) },
    };
    return { ...args, contextValue: { subscription } satisfies Run };
  }

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: WS_LIMITS.maxPayloadBytes,
    perMessageDeflate: false,
    handleProtocols: (protocols) => handleProtocols(protocols),
    closeTimeout: WS_LIMITS.closeTimeoutMs,
  } as ServerOptions);

  wss.on('connection', (socket: WebSocket, request: IncomingMessage) => {
    const connection: Connection = {
      socket,
      ip: clientIp(request, options.trustProxy),
      cookieToken: cookieToken(request, options.publicUrl, options.cors),
      credential: undefined,
      subscriptions: new Set(),
      alive: true,
    };
    connections.set(socket, connection);
    socket.on('pong', onPong);
    // ws closes the socket itself on protocol faults (1009 too big, 1002, 1007); only note them.
    socket.on('error', (error) => log.debug({ err: error, ip: connection.ip }, 'WebSocket error'));
    const closed = protocol.opened(
      {
        protocol: socket.protocol,
        send: (data) => send(connection, data),
        close: (code, reason) => socket.close(code, reason),
        onMessage: (handle) =>
          socket.on('message', (data) => {
            handle(String(data)).catch((error: unknown) => {
              log.error({ err: error }, 'unexpected error handling a WebSocket message');
              socket.close(WS_CLOSE.InternalServerError, 'Internal server error');
            });
          }),
      },
      connection,
    );
    socket.once('close', (code, reason) => {
      connections.delete(socket);
      closed(code, reason.toString()).catch((error: unknown) => log.error({ err: error }, 'error releasing a WebSocket'));
    });
  });

  function onPong(this: WebSocket): void {
    const connection = connections.get(this);
    if (connection) connection.alive = true;
  }

  const keepAlive = setInterval(() => {
    for (const connection of connections.values()) {
      if (!connection.alive) {
        connection.socket.terminate();
        continue;
      }
      connection.alive = false;
      connection.socket.ping();
    }
  }, WS_LIMITS.keepAliveMs);
  keepAlive.unref();

  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = (request.url ?? '').split('?', 1)[0];
    if (path !== WS_PATH) return refuse(socket, 404);
    if (!accepting) return refuse(socket, 503);
    // The same rules as every HTTP request (docs/limits.md): one Host, and no new work while overloaded.
    if (hasDuplicateHost(request.rawHeaders)) return refuse(socket, HTTP_REFUSALS.duplicateHost.status, {}, refusalBody('', HTTP_REFUSALS.duplicateHost));
    if (options.overloaded?.()) return refuse(socket, 503, { 'retry-after': '5' }, refusalBody('', HTTP_REFUSALS.overloaded, true));
    const place = options.caps?.acquire(clientIp(request, options.trustProxy));
    if (place && !place.admitted) {
      return refuse(socket, place.status, { 'retry-after': String(place.retryAfterSeconds) }, { error: place.error });
    }
    // The raw socket's close ends every path: refused handshake, close, terminate, reset.
    if (place) socket.once('close', place.release);
    wss.handleUpgrade(request, socket, head, (ws) => wss.emit('connection', ws, request));
  };
  httpServer.on('upgrade', onUpgrade);

  async function shutDown(): Promise<void> {
    accepting = false;
    clearInterval(keepAlive);
    await hub.drain();
    const sockets = [...connections.keys()];
    const allClosed = Promise.all(sockets.map((socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()))));
    // ws sends the close frame after the data already queued on each socket.
    for (const socket of sockets) socket.close(WS_CLOSE.GoingAway, 'Server shutting down');
    const deadline = setTimeout(() => sockets.forEach((socket) => socket.terminate()), WS_LIMITS.shutdownGraceMs);
    await allClosed;
    clearTimeout(deadline);
    hub.close();
    httpServer.off('upgrade', onUpgrade);
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  }

  return {
    stats: () => ({ connections: connections.size, ...hub.stats(), slowConsumersClosed }),
    close: () => (closing ??= shutDown()),
  };
}

/** A signal that aborts once the socket closes (a heavy operation then leaves its line); one per connection, made on first use. */
function closedSignal(connection: Connection): AbortSignal {
  if (!connection.closed) {
    const controller = new AbortController();
    connection.closed = controller;
    if (connection.socket.readyState !== WebSocket.OPEN) controller.abort();
    else connection.socket.once('close', () => controller.abort());
  }
  return connection.closed.signal;
}
