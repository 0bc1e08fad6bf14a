import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Identity } from '../../auth/caller.js';
import { sendGraphiQL } from '../../graphiql/page.js';
import type { RequestCore } from '../operation/core.js';
import {
  BadRequest,
  InternalError,
  MethodNotAllowed,
  NotAcceptable,
  PayloadTooLarge,
  RateLimited,
  RequestError,
  UnsupportedMediaType,
  formatError,
  type FormatOptions,
} from '../operation/errors.js';
import type { CostReport } from '../operation/cost-report.js';
import { acceptedMediaType, contentTypeOf, isAcceptable, prefersEventStream } from './media.js';
import { readParams, wantsHtml } from './params.js';
import { observe } from '../../observability/request.js';

/**
 * GraphQL over HTTP at /graphql (docs/graphql-endpoint.md), on Fastify: the adapter of
 * the request core (src/graphql/operation/core.ts). It reads the caller and the request,
 * the core answers, and this writes the answer. graphql-http's conformance audit holds it
 * to the GraphQL-over-HTTP spec (test/graphql/http/audit.test.ts).
 */

export const MAX_BODY_BYTES = 1_048_576;

export interface GraphQLHttpOptions {
  core: RequestCore;
  isProduction: boolean;
  /** Who is asking (once per request): anonymous without a credential, `rejected` for a refused one. */
  identify(request: FastifyRequest): Promise<Identity>;
  /** Starts the 401 for a refused credential (status, `WWW-Authenticate`, cookie cleared). */
  refuseCredential(reply: FastifyReply, identity: Identity): FastifyReply;
  /** Answers a request that prefers `text/event-stream`: GraphQL over SSE (src/graphql/sse/). */
  eventStream?(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
}

/** Registered without fastify-plugin on purpose: its parsers and error handler stay inside. */
export async function graphqlHttpRoutes(app: FastifyInstance, options: GraphQLHttpOptions): Promise<void> {
  const { core, isProduction, identify } = options;

  const formatOptions = (request: FastifyRequest): FormatOptions => ({
    isProduction,
    onInternal: (error) => request.log.error({ err: error }, 'unexpected error in a resolver'),
    onCode: app.metrics.graphqlError, // observability:
  });

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isProduction && request.method === 'GET' && wantsHtml(request)) {
      return sendGraphiQL(reply);
    }
    if (options.eventStream && prefersEventStream(request.headers.accept)) return options.eventStream(request, reply);
    const identity = await identify(request);
    observe(request).caller(identity.caller); // observability:
    const format = formatOptions(request);
    const answer = await core.serve({
      caller: identity.caller,
      credentialRefused: identity.rejected,
      ip: request.ip,
      size: request.method === 'GET' ? request.url.length : ((request.body as string | undefined)?.length ?? 0),
      transport: request.method === 'GET' ? 'http-get' : 'http-post',
      format,
      readParams: () => {
        if (!isAcceptable(request.headers.accept)) throw new NotAcceptable();
        return readParams({ method: request.method, url: request.url, headers: request.headers, body: (request.body as string | undefined) ?? null });
      },
      signal: () => clientGone(reply),
    });
    reply.headers(answer.headers);
    // observability: the operation and the cache outcome, for the request's metrics and log line.
    if (answer.operation) observe(request).operation(answer.operation).cache(answer.kind === 'result' ? answer.cache : 'none');
    if (answer.kind === 'result') return reply.code(200).type(responseType(request)).send(answer.body);
    if (answer.kind === 'subscription') throw new Error('a subscription reached the HTTP adapter'); // refused by preparation
    // docs/permissions.md: a present but invalid credential is refused, so clients know to refresh.
    if (answer.status === 401 && identity.rejected) options.refuseCredential(reply, identity);
    return sendRefusal(request, reply, new RequestError(answer.errors, answer.status), format, answer.status, answer.cost);
  };

  // The body arrives as text whatever its type: `readParams` decides what is acceptable
  // (415 for anything but JSON), so Fastify's own parsers must not answer first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));

  app.setErrorHandler((error: { statusCode?: number }, request, reply) => {
    const format = formatOptions(request);
    if (error.statusCode === 413) return sendRefusal(request, reply, new PayloadTooLarge(), format);
    if (error.statusCode === 415) return sendRefusal(request, reply, new UnsupportedMediaType(), format);
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return sendRefusal(request, reply, new BadRequest(), format, error.statusCode);
    }
    request.log.error({ err: error }, 'unexpected error on /graphql');
    return sendRefusal(request, reply, new InternalError(), format);
  });

  // HEAD is a wrong method here too: it would run the operation to drop its result.
  app.route({ method: ['GET', 'POST'], url: '/graphql', bodyLimit: MAX_BODY_BYTES, exposeHeadRoute: false, handler: serve });
  // Every other method Fastify routes, answered before any body is read. A CORS preflight
  // is answered earlier (src/http/cors.ts); a method Fastify does not route at all
  // reaches src/http/not-found.ts, which answers with this same 405.
  app.route({
    method: app.supportedMethods.filter((method) => method !== 'GET' && method !== 'POST'),
    url: '/graphql',
    onRequest: async (request, reply) => methodNotAllowed(request, reply),
    handler: methodNotAllowed,
  });
}

/** 405 with `Allow: GET, POST`: the answer to any other method on /graphql. */
export function methodNotAllowed(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const format: FormatOptions = { isProduction: true, onInternal: () => {}, onCode: request.server.metrics.graphqlError }; // observability:
  return sendRefusal(request, reply, new MethodNotAllowed('Method Not Allowed', 'GET, POST'), format);
}

/**
 * The one body of a refusal on /graphql: `{errors}` with no `data`, in the negotiated type.
 * A 429 also says `error` (the account area's shape), as clients of both areas read it.
 * A refusal that reached the cost bucket carries `extensions.cost` (docs/limits.md, "Cost").
 */
export function sendRefusal(
  request: FastifyRequest,
  reply: FastifyReply,
  refusal: RequestError,
  format: FormatOptions,
  status = refusal.status,
  cost?: CostReport,
): FastifyReply {
  const errors = refusal.errors.map((e) => formatError(e, format));
  const extensions = cost && { cost };
  if (status === 429) {
    const body = JSON.stringify({ error: RateLimited.message, errors, extensions });
    return reply.code(429).headers(refusal.headers).type('application/json; charset=utf-8').send(body);
  }
  return reply.code(status).headers(refusal.headers).type(responseType(request)).send(JSON.stringify({ errors, extensions }));
}

/**
 * Aborts once the client closes the connection before its answer was written: a heavy
 * operation still waiting for its turn then leaves the line (docs/limits.md).
 */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const response = reply.raw;
  if (response.destroyed || response.socket?.destroyed) controller.abort();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}

function responseType(request: FastifyRequest): string {
  return contentTypeOf(acceptedMediaType(request.headers.accept));
}
