import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Identity } from '../../auth/caller.js';
import type { WireCode } from '../../errors.js';
import { sendGraphiQL } from '../../graphiql/page.js';
import type { Services } from '../../domain/services.js';
import { clientKey, createLimiter, TOO_MANY_REQUESTS } from '../../rate-limit/limiter.js';
import type { ResponseCache } from '../cache/response-cache.js';
import { RequestError, formatError, requestError, withCode, type FormatOptions } from '../operation/errors.js';
import { execute, type RequestPreparer } from '../operation/request.js';
import { acceptedMediaType, contentTypeOf, isAcceptable } from './media.js';
import { readParams, wantsHtml } from './params.js';
import { cacheOutcomeOf, observe } from '../../observability/request.js';

/**
 * GraphQL over HTTP at /graphql (docs/graphql-endpoint.md), on Fastify: rate limit →
 * caller → the shared preparation (src/graphql/operation/request.ts) → a cached body or
 * execution → the response. graphql-http's conformance audit holds it to the
 * GraphQL-over-HTTP spec (test/http/audit.test.ts).
 */

export const MAX_BODY_BYTES = 1_048_576;

export interface GraphQLHttpOptions {
  preparer: RequestPreparer;
  services: Services;
  responseCache: ResponseCache | undefined;
  isProduction: boolean;
  rateLimit: { max: number; windowMs: number };
  /** Who is asking (once per request): anonymous without a credential, `rejected` for a refused one. */
  identify(request: FastifyRequest): Promise<Identity>;
  /** Starts the 401 for a refused credential (status, `WWW-Authenticate`, cookie cleared). */
  refuseCredential(reply: FastifyReply, identity: Identity): FastifyReply;
}

/** Registered without fastify-plugin on purpose: its parsers and error handler stay inside. */
export async function graphqlHttpRoutes(app: FastifyInstance, options: GraphQLHttpOptions): Promise<void> {
  const { preparer, services, responseCache, isProduction, identify } = options;
  const limit = createLimiter(app, {
    group: 'graphql',
    ...options.rateLimit,
    clientKey: async (request) => clientKey((await identify(request)).caller, request.ip),
  });

  const formatOptions = (request: FastifyRequest): FormatOptions => ({
    isProduction,
    onInternal: (error) => request.log.error({ err: error }, 'unexpected error in a resolver'),
    onCode: app.metrics.graphqlError, // observability:
  });

  const sendRefusal = (request: FastifyRequest, reply: FastifyReply, error: RequestError) => {
    const format = formatOptions(request);
    const body = JSON.stringify({ errors: error.errors.map((e) => formatError(e, format)) });
    return reply.code(error.status).headers(error.headers).type(responseType(request)).send(body);
  };

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isProduction && request.method === 'GET' && wantsHtml(request)) {
      return sendGraphiQL(reply);
    }
    const decision = await limit(request, reply);
    if (!decision.allowed) {
      const body = { error: TOO_MANY_REQUESTS, errors: [{ message: TOO_MANY_REQUESTS, extensions: { code: 'RATE_LIMITED' } }] };
      app.metrics.graphqlError('RATE_LIMITED'); // observability:
      return reply.code(429).type('application/json; charset=utf-8').send(JSON.stringify(body));
    }
    const identity = await identify(request);
    observe(request).caller(identity.caller); // observability:
    if (identity.rejected) {
      // docs/permissions.md: a present but invalid credential is refused, so clients know to refresh.
      options.refuseCredential(reply, identity);
      return sendRefusal(request, reply, requestError('Invalid or expired credentials', 'UNAUTHENTICATED', 401));
    }
    let admission;
    try {
      if (!isAcceptable(request.headers.accept)) throw requestError('Not Acceptable', 'NOT_ACCEPTABLE', 406);
      const params = readParams({ method: request.method, url: request.url, headers: request.headers, body: (request.body as string | undefined) ?? null });
      admission = await preparer.prepare(params, identity.caller, request.method === 'GET' ? 'http-get' : 'http-post');
    } catch (error) {
      if (error instanceof RequestError) return sendRefusal(request, reply, error);
      throw error;
    }
    // observability: the operation and the cache outcome, for the request's metrics and log line.
    observe(request).operation('cached' in admission ? admission.operation : admission.prepared.operation).cache('cached' in admission ? 'hit' : cacheOutcomeOf(admission.prepared.cacheSlot));
    if ('cached' in admission) return reply.code(200).type(responseType(request)).send(admission.cached);
    const { prepared } = admission;
    let execution;
    try {
      execution = await execute(prepared, services, prepared.line && clientGone(reply));
    } catch (error) {
      if (error instanceof RequestError) return sendRefusal(request, reply, error);
      throw error;
    }
    const format = formatOptions(request);
    if (execution.data === undefined || (execution.data === null && !execution.errors?.some((e) => e.path))) {
      // No data and no field path: variables did not match their types. A request error.
      const errors = (execution.errors ?? []).map((e) => formatError(withCode(e, 'GRAPHQL_VALIDATION_FAILED'), format));
      return reply.code(400).type(responseType(request)).send(JSON.stringify({ errors }));
    }
    let body: string;
    if (execution.errors) {
      body = JSON.stringify({ data: execution.data, errors: execution.errors.map((e) => formatError(e, format)) });
    } else {
      body = prepared.operation.compiled.stringify(execution);
      // Only error-free results are kept: an error may be transient.
      if (prepared.cacheSlot) responseCache?.store(prepared.cacheSlot, body);
    }
    return reply.code(200).type(responseType(request)).send(body);
  };

  // The body arrives as text whatever its type: `readParams` decides what is acceptable
  // (415 for anything but JSON), so Fastify's own parsers must not answer first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_request, body, done) => done(null, body));

  app.setErrorHandler((error: { statusCode?: number }, request, reply) => {
    if (error.statusCode === 413) return sendRefusal(request, reply, requestError('Request body exceeds 1 MiB', 'PAYLOAD_TOO_LARGE', 413));
    if (error.statusCode === 415) return sendRefusal(request, reply, requestError('Unsupported Media Type', 'UNSUPPORTED_MEDIA_TYPE', 415));
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return sendRefusal(request, reply, requestError('Bad request', 'BAD_REQUEST', error.statusCode));
    }
    request.log.error({ err: error }, 'unexpected error on /graphql');
    return sendRefusal(request, reply, requestError('Internal server error', 'INTERNAL_ERROR', 500));
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
  request.server.metrics.graphqlError('METHOD_NOT_ALLOWED'); // observability:
  const body = JSON.stringify({ errors: [{ message: 'Method Not Allowed', extensions: { code: 'METHOD_NOT_ALLOWED' satisfies WireCode } }] });
  return reply.code(405).header('allow', 'GET, POST').type(responseType(request)).send(body);
}

/**
 * Aborts once the client closes the connection before its answer was written: a heavy
 * operation still waiting for its turn then leaves the line (docs/limits.md).
 */
function clientGone(reply: FastifyReply): AbortSignal {
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
