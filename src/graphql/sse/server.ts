import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLError, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { Identity } from '../../auth/caller.js';
import type { Services } from '../../domain/services.js';
import type { ConnectionCaps } from '../../http/connection-caps.js';
import { observe } from '../../observability/request.js';
import { readParams } from '../http/params.js';
import { clientGone, sendRefusal } from '../http/route.js';
import type { CostReport, RequestCore } from '../operation/core.js';
import { costJson } from '../operation/cost-report.js';
import { Overloaded, RequestError, formatError, tooManyConnections, type FormatOptions } from '../operation/errors.js';
import { FanoutHub } from '../ws/fanout.js';
import { EVENT_STREAM_TYPE, SSE_LIMITS, nextEvent, refusedInStream } from './protocol.js';
import { EventStream } from './stream.js';

/**
 * GraphQL over Server-Sent Events at /graphql (docs/subscriptions.md, "Server-Sent
 * Events"): the graphql-sse protocol in its distinct connections mode, one operation per
 * request. The HTTP route hands over the requests whose `Accept` prefers
 * `text/event-stream` (../http/route.ts). Like the other transports this is an adapter of
 * the request core (../operation/core.ts): it reads the caller and the request, the core
 * answers, and this writes the answer as an event stream. Subscriptions join the
 * WebSocket's fan-out (../ws/fanout.ts), so an event executes once per group of equal
 * subscribers and reaches streams on every instance through the pub/sub.
 *
 * An open stream holds a place among the long-lived connections (src/http/connection-caps.ts),
 * as a WebSocket does, from the request until its response closes.
 */

export interface GraphqlSseOptions {
  core: RequestCore;
  /** For the fan-out's executions of subscription events. */
  schema: GraphQLSchema;
  services: Services;
  isProduction: boolean;
  /** Open connections per client address and per instance, shared with the WebSocket. */
  caps: ConnectionCaps;
  /** Who is asking, as over HTTP: the `Authorization: Bearer` header, else the `auth-token` cookie. */
  identify(request: FastifyRequest): Promise<Identity>;
  /** Starts the 401 for a refused credential (status, `WWW-Authenticate`, cookie cleared). */
  refuseCredential(reply: FastifyReply, identity: Identity): FastifyReply;
}

export interface GraphqlSse {
  /** Answers one request that prefers `text/event-stream`. */
  serve(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
  /** Open streams, live subscriptions and their groups, and streams cut for not reading. */
  stats(): { streams: number; subscriptions: number; groups: number; slowConsumersClosed: number };
  /** Refuses new streams, sends the events in flight, completes every stream and waits (bounded). */
  close(): Promise<void>;
}

/** Registers its shutdown (`preClose`) and its gauges (`/metrics`) on `app`. */
export function graphqlSse(app: FastifyInstance, options: GraphqlSseOptions): GraphqlSse {
  const { core, caps, isProduction } = options;
  /** Open streams and their responses. */
  const streams = new Map<EventStream, ServerResponse>();
  let closing: Promise<void> | undefined;
  let slowConsumersClosed = 0;

  const formatOptions = (request: FastifyRequest): FormatOptions => ({
    isProduction,
    onInternal: (error) => request.log.error({ err: error }, 'unexpected error in a resolver'),
    onCode: app.metrics.graphqlError, // observability:
  });
  const formatResult = (result: ExecutionResult, format: FormatOptions): string =>
    JSON.stringify(result.errors ? { ...result, errors: result.errors.map((e) => formatError(e, format)) } : result);

  const hub = new FanoutHub<EventStream>({
    schema: options.schema,
    services: options.services,
    format: {
      isProduction,
      onInternal: (error) => app.log.error({ err: error }, 'unexpected error in an SSE subscription event'),
      onCode: app.metrics.graphqlError, // observability:
    },
    // Distinct connections: an event's frame names no subscriber, so it is made once per group.
    frame: nextEvent,
    write: (stream, frame) => stream.send(frame),
  });

  /** The client stopped reading: its connection is cut, which frees what waits for it. */
  const cut = (response: ServerResponse): void => {
    slowConsumersClosed++;
    app.log.warn({ remoteAddress: response.socket?.remoteAddress }, 'cut an event stream whose client stopped reading');
    response.destroy();
  };

  /** Starts the response: a 200 whose body is the stream. */
  const open = (reply: FastifyReply, stream: EventStream): FastifyReply => {
    const response = reply.raw;
    streams.set(stream, response);
    response.once('close', () => streams.delete(stream));
    // A credentialed request's `private, no-store` stays (src/http/hygiene.ts); proxies must not buffer.
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-cache');
    reply.header('x-accel-buffering', 'no');
    return reply.code(200).type(EVENT_STREAM_TYPE).send(stream);
  };
  const newStream = (reply: FastifyReply): EventStream => new EventStream(SSE_LIMITS.maxBufferedBytes, () => cut(reply.raw));

  // observability: the operation's duration to its answer (a stream opened, or a refusal), as over WebSocket.
  const observed = (request: FastifyRequest, reply: FastifyReply, status: number): void => {
    const observation = observe(request);
    observation.observed = true;
    app.metrics.observeOperation({ transport: 'sse', route: '/graphql', operationType: observation.operationType, status, seconds: reply.elapsedTime / 1000 });
  };

  /** A refusal before the stream, as over HTTP (with `extensions.cost` once the bucket was asked). */
  const refuse = (request: FastifyRequest, reply: FastifyReply, refusal: RequestError, format: FormatOptions, cost?: CostReport): FastifyReply => {
    observed(request, reply, refusal.status);
    return sendRefusal(request, reply, refusal, format, refusal.status, cost);
  };

  /** One result (a query's or mutation's, or the errors of a refusal), then `complete`. */
  const answerOnce = (request: FastifyRequest, reply: FastifyReply, resultJson: string, status: number, stream = newStream(reply)): FastifyReply => {
    stream.next(resultJson);
    stream.complete();
    observed(request, reply, status);
    return open(reply, stream);
  };

  async function serve(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    observe(request).eventStream(); // observability:
    const format = formatOptions(request);
    if (closing) return refuse(request, reply, new Overloaded('Server shutting down; retry later', 1), format);
    const place = caps.acquire(request.ip);
    if (!place.admitted) return refuse(request, reply, tooManyConnections(place.status, place.error, place.retryAfterSeconds), format);
    // The response's close ends every path: completed, cut, or the client gone.
    reply.raw.once('close', place.release);

    const identity = await options.identify(request);
    observe(request).caller(identity.caller); // observability:
    const answer = await core.serve({
      caller: identity.caller,
      credentialRefused: identity.rejected,
      ip: request.ip,
      size: request.method === 'GET' ? request.url.length : ((request.body as string | undefined)?.length ?? 0),
      transport: request.method === 'GET' ? 'sse-get' : 'sse-post',
      format,
      // The same parameters as over HTTP: POST only as JSON (the CSRF rule), GET for queries and subscriptions.
      readParams: () => readParams({ method: request.method, url: request.url, headers: request.headers, body: (request.body as string | undefined) ?? null }),
      signal: () => clientGone(reply),
    });
    reply.headers(answer.headers);
    // observability: the operation and the cache outcome, for the request's metrics and log line.
    if (answer.operation) observe(request).operation(answer.operation).cache(answer.kind === 'result' ? answer.cache : 'none');

    if (answer.kind === 'refused') {
      if (refusedInStream(answer.status)) {
        const errors = answer.errors.map((e) => formatError(e, format));
        return answerOnce(request, reply, JSON.stringify({ errors, extensions: answer.cost && { cost: answer.cost } }), answer.status);
      }
      // docs/permissions.md: a present but invalid credential is refused, so clients know to refresh.
      if (answer.status === 401 && identity.rejected) options.refuseCredential(reply, identity);
      return refuse(request, reply, new RequestError(answer.errors, answer.status), format, answer.cost);
    }
    if (answer.kind === 'result') return answerOnce(request, reply, answer.body.toString(), 200);

    const stream = newStream(reply);
    const member = await hub.subscribe({
      prepared: answer.prepared.operation,
      variables: answer.variables,
      variablesKey: answer.variablesKey,
      caller: identity.caller,
      // Each event says what the subscription was charged when it started.
      subscriber: { connection: stream, id: '', cost: answer.cost && costJson(answer.cost) },
    });
    // It could not start (bad arguments, a resolver's error): one result.
    if (!(Symbol.asyncIterator in member)) return answerOnce(request, reply, formatResult(member, format), 200, stream);
    if (closing) {
      void member.return?.();
      return refuse(request, reply, new Overloaded('Server shutting down; retry later', 1), format);
    }
    // Reading makes the subscriber live; the read ends when the group does (or on shutdown).
    member.next().then(
      () => stream.complete(),
      (error: unknown) => {
        stream.next(formatResult({ errors: [internalError(error)] }, format));
        stream.complete();
      },
    );
    // The stream ends (completed, cut, or its client gone): the subscriber leaves its group.
    stream.once('close', () => void member.return?.());
    // The headers go out with this first byte, once the subscription is live.
    stream.keepAlive();
    observed(request, reply, 200);
    return open(reply, stream);
  }

  const keepAlive = setInterval(() => {
    for (const stream of streams.keys()) stream.keepAlive();
  }, SSE_LIMITS.keepAliveMs);
  keepAlive.unref();

  async function shutDown(): Promise<void> {
    clearInterval(keepAlive);
    // The events being executed and written now go out first.
    await hub.drain();
    const responses = [...streams.values()];
    const allClosed = Promise.all(responses.map((response) => new Promise<void>((resolve) => response.once('close', () => resolve()))));
    // Every subscription ends: its stream takes `complete` after what it was sent, then its response ends.
    hub.close();
    for (const stream of streams.keys()) stream.complete();
    const deadline = setTimeout(() => responses.forEach((response) => response.destroy()), SSE_LIMITS.shutdownGraceMs);
    await allClosed;
    clearTimeout(deadline);
  }

  const stats = () => {
    const { subscribers, groups } = hub.stats();
    return { streams: streams.size, subscriptions: subscribers, groups, slowConsumersClosed };
  };
  app.metrics.watchEventStreams(stats); // observability:
  const close = () => (closing ??= shutDown());
  // Open streams would keep the HTTP server from closing: they complete first.
  app.addHook('preClose', close);

  return { serve, stats, close };
}

/** formatError masks it as INTERNAL_ERROR and hands the original to the log. */
function internalError(error: unknown): GraphQLError {
  const original = error instanceof Error ? error : new Error(String(error));
  return new GraphQLError(original.message, { originalError: original });
}
