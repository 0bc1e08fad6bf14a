import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ExecutionArgs, ExecutionResult, GraphQLFormattedError } from 'graphql';
import { createHandler, type Request as HttpRequest, type RequestParams, type Response as HttpResponse } from 'graphql-http';
import type { Caller } from '../domain/caller.js';
import { replayedBody } from '../http/front-door.js';
import type { Services } from '../domain/services.js';
import { createContext, type GraphQLContext } from './context.js';
import { RequestError, formatError, requestError, withCode, type FormatOptions } from './errors.js';
import { graphiqlHtml } from './graphiql.js';
import { acceptedMediaType, contentTypeOf, isAcceptable } from './media.js';
import type { PersistedQueries } from './persisted.js';
import type { OperationPipeline, PreparedOperation } from './pipeline.js';
import { CacheProbe, type ProbedMiss } from './cache-probe.js';
import { firstHeader, readParams, wantsHtml, type RawGraphQLRequest } from './request-params.js';
import type { CacheSlot, ResponseCache } from './response-cache.js';
import { cacheOutcomeOf, observe } from '../observability/request.js';
import { traceExecute } from '../observability/tracing.js';

/**
 * The HTTP adapter: graphql-http (the reference GraphQL-over-HTTP implementation)
 * on Fastify. graphql-http negotiates, checks methods and drives the flow; our hooks
 * hand it prepared operations from the shared pipeline and write the responses, so
 * status codes and error bodies follow SPEC section 2 exactly.
 */

export const MAX_BODY_BYTES = 1_048_576;

export interface GraphQLHttpOptions {
  pipeline: OperationPipeline;
  services: Services;
  persisted: PersistedQueries;
  /** Whole-response cache for queries; absent when disabled. */
  responseCache?: ResponseCache;
  isProduction: boolean;
  /** Who is asking; anonymous when there is no valid credential. */
  authenticate(request: FastifyRequest): Promise<Caller>;
  /** Runs before the operation (rate limiting); may answer the request itself. */
  preHandler?: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

interface RequestContext {
  caller: Caller;
  registerAs: string | undefined;
  log: FastifyRequest['log'];
  /** Set by the cache probe on a miss, so the full path does not parse, prepare or look up again. */
  probed?: ProbedMiss;
}

interface PreparedArgs extends ExecutionArgs {
  contextValue: GraphQLContext;
  prepared: PreparedOperation;
  cacheSlot: CacheSlot | undefined;
}

type Req = HttpRequest<FastifyRequest, RequestContext>;

async function graphqlHttp(app: FastifyInstance, options: GraphQLHttpOptions): Promise<void> {
  const { pipeline, services, persisted, isProduction } = options;

  const formatOptions = (log: FastifyRequest['log']): FormatOptions => ({
    isProduction,
    onInternal: (error) => log.error({ err: error }, 'unexpected error in a resolver'),
    onCode: app.metrics.graphqlError, // observability:
  });

  const errorResponse = (req: Req, error: RequestError): HttpResponse => {
    const format = formatOptions(req.context.log);
    const body = JSON.stringify({ errors: error.errors.map((e) => formatError(e, format)) });
    const type = contentTypeOf(acceptedMediaType(header(req, 'accept')));
    return [body, { status: error.status, statusText: '', headers: { 'content-type': type } }];
  };

  const executionArgs = (req: Req, prepared: PreparedOperation, params: RequestParams, slot: CacheSlot | undefined): PreparedArgs => ({
    schema: pipeline.schema,
    document: prepared.document,
    operationName: prepared.operationName,
    variableValues: params.variables ?? undefined,
    contextValue: createContext(services, req.context.caller),
    rootValue: undefined,
    prepared,
    cacheSlot: slot,
  });

  const handler = createHandler<FastifyRequest, RequestContext, GraphQLContext>({
    schema: pipeline.schema,

    parseRequestParams: async (req) => {
      if (req.context.probed) return req.context.probed.params;
      try {
        const params = readParams(rawRequest(req));
        const resolved = await persisted.resolve(params.query, params.extensions);
        req.context.registerAs = resolved.registerAs;
        return { ...params, query: resolved.query };
      } catch (error) {
        if (error instanceof RequestError) return errorResponse(req, error);
        throw error;
      }
    },

    onSubscribe: async (req, params) => {
      const probed = req.context.probed;
      if (probed) observe(req.raw).operation(probed.prepared).cache(cacheOutcomeOf(probed.slot)); // observability:
      if (probed) return executionArgs(req, probed.prepared, probed.params, probed.slot);
      let prepared: PreparedOperation;
      try {
        prepared = pipeline.prepare(params.query, params.operationName, params.variables);
        observe(req.raw).operation(prepared); // observability:
        if (prepared.operationType === 'subscription') {
          throw requestError('Subscriptions are served over WebSocket at this path', 'BAD_REQUEST');
        }
      } catch (error) {
        if (error instanceof RequestError) return errorResponse(req, error);
        throw error;
      }
      if (req.context.registerAs) await persisted.register(req.context.registerAs, params.query);
      const cached = await options.responseCache?.lookup(prepared, params.variables, req.context.caller);
      observe(req.raw).cache(cacheOutcomeOf(cached)); // observability:
      if (cached && 'body' in cached) {
        // A hit here is rare (the probe took the others): a registration of a cached text.
        const type = contentTypeOf(acceptedMediaType(header(req, 'accept')));
        return [cached.body.toString('utf8'), { status: 200, statusText: '', headers: { 'content-type': type } }];
      }
      return executionArgs(req, prepared, params, cached);
    },

    execute: (args) => {
      const { prepared, contextValue, variableValues } = args as PreparedArgs;
      // observability: the `graphql.execute` span.
      return traceExecute(prepared, () => prepared.compiled.query(undefined, contextValue, variableValues) as ExecutionResult);
    },

    onOperation: (req, args, result) => {
      const format = formatOptions(req.context.log);
      const type = contentTypeOf(acceptedMediaType(header(req, 'accept')));
      const execution = result as ExecutionResult;
      if (execution.data === undefined || execution.data === null && !execution.errors?.some((e) => e.path)) {
        // No data and no field path: variables did not match their types. A request error.
        const errors = (execution.errors ?? []).map((e) => formatError(withCode(e, 'GRAPHQL_VALIDATION_FAILED'), format));
        return [JSON.stringify({ errors }), { status: 400, statusText: '', headers: { 'content-type': type } }];
      }
      const { prepared, cacheSlot } = args as PreparedArgs;
      let body: string;
      if (execution.errors) {
        body = JSON.stringify({ data: execution.data, errors: execution.errors.map((e): GraphQLFormattedError => formatError(e, format)) });
      } else {
        body = prepared.compiled.stringify(execution);
        // Only error-free results are kept: an error may be transient.
        if (cacheSlot) options.responseCache?.store(cacheSlot, body);
      }
      return [body, { status: 200, statusText: '', headers: { 'content-type': type } }];
    },

    formatError: (error) => {
      app.metrics.graphqlError('BAD_REQUEST'); // observability:
      return { message: error.message, extensions: { code: 'BAD_REQUEST' } } as never;
    },
  });

  // The body arrives as text whatever its type: graphql-http decides what is acceptable
  // (415 for anything but JSON), so Fastify's own parsers must not answer first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, (_req, body, done) => done(null, body));

  app.setErrorHandler((error: { statusCode?: number; code?: string }, request, reply) => {
    if (error.statusCode === 413) return sendError(reply, request, 413, 'Request body exceeds 1 MiB', 'PAYLOAD_TOO_LARGE');
    if (error.statusCode === 415) return sendError(reply, request, 415, 'Unsupported Media Type', 'UNSUPPORTED_MEDIA_TYPE');
    if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
      return sendError(reply, request, error.statusCode, 'Bad request', 'BAD_REQUEST');
    }
    request.log.error({ err: error }, 'unexpected error on /graphql');
    return sendError(reply, request, 500, 'Internal server error', 'INTERNAL_ERROR');
  });

  const probe = options.responseCache && new CacheProbe(pipeline, persisted, options.responseCache);

  const serve = async (request: FastifyRequest, reply: FastifyReply) => {
    if (!isProduction && request.method === 'GET' && wantsHtml(request)) {
      return reply.type('text/html; charset=utf-8').send(graphiqlHtml);
    }
    if (options.preHandler) {
      await options.preHandler(request, reply);
      if (reply.sent) return reply;
    }
    const caller = await options.authenticate(request);
    observe(request).caller(caller); // observability:
    const req: Req = {
      method: request.method,
      url: request.url,
      headers: request.headers,
      body: (request.body as string | undefined) ?? null,
      raw: request,
      context: { caller, registerAs: undefined, log: request.log },
    };
    if (probe && isAcceptable(request.headers.accept)) {
      const found = await probe.probe(rawRequest(req), caller);
      if (found && 'hit' in found) observe(request).operation(found.prepared).cache('hit'); // observability:
      if (found && 'hit' in found) return reply.code(200).type(contentTypeOf(acceptedMediaType(request.headers.accept))).send(found.hit);
      if (found) req.context.probed = found.miss;
    }
    const [body, init] = await handler(req);
    if (body === null) return sendError(reply, request, init.status, init.statusText || 'Request refused', codeForStatus(init.status), init.headers);
    // graphql-http answers a mutation over GET with a 405 body of its own: no content type, no code.
    if (init.status === 405) return sendError(reply, request, 405, 'Cannot perform mutations over GET', 'METHOD_NOT_ALLOWED', init.headers);
    reply.code(init.status);
    if (init.headers) reply.headers(init.headers as Record<string, string>);
    return reply.send(body);
  };

  app.route({
    method: ['GET', 'POST'],
    url: '/graphql',
    bodyLimit: MAX_BODY_BYTES,
    // A body the front door read before declining the request (src/http/front-door.ts).
    preParsing: async (request, _reply, payload) => replayedBody(request.raw) ?? payload,
    handler: serve,
  });
  app.route({
    method: ['PUT', 'PATCH', 'DELETE'],
    url: '/graphql',
    handler: (request, reply) => sendError(reply, request, 405, 'Method Not Allowed', 'METHOD_NOT_ALLOWED', { allow: 'GET, POST' }),
  });
}

function codeForStatus(status: number): string {
  if (status === 405) return 'METHOD_NOT_ALLOWED';
  if (status === 406) return 'NOT_ACCEPTABLE';
  if (status === 415) return 'UNSUPPORTED_MEDIA_TYPE';
  return 'BAD_REQUEST';
}

function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  status: number,
  message: string,
  code: string,
  headers: Record<string, string> = {},
) {
  const type = contentTypeOf(acceptedMediaType(request.headers.accept));
  request.server.metrics.graphqlError(code); // observability:
  return reply.code(status).headers(headers).type(type).send(JSON.stringify({ errors: [{ message, extensions: { code } }] }));
}

function rawRequest(req: Req): RawGraphQLRequest {
  return { method: req.method, url: req.url, headers: req.headers as IncomingHttpHeaders, body: typeof req.body === 'string' ? req.body : null };
}

function header(req: Req, name: string): string | undefined {
  return firstHeader(req.headers as IncomingHttpHeaders, name);
}

/** Registered without fastify-plugin on purpose: its parsers and error handler stay inside. */
export const graphqlHttpPlugin = graphqlHttp;
