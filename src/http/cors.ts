import { HTTP_REFUSALS, refusalBody } from '../errors.js';
import fastifyCors from '@fastify/cors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../config.js';

/**
 * CORS for browser apps on other origins (README, "Browser apps"): the
 * origins of `CORS_ORIGINS` (and loopback outside production) may call `/graphql` and
 * `/api/*` with credentials; every other origin gets no CORS headers, and its preflight
 * a 403. The pages, health and metrics are same-origin only. `isAllowedOrigin` is the
 * one allow-list check, shared with the WebSocket upgrade (src/graphql/ws/auth.ts).
 */

export type CorsPolicy = Config['cors'];

/** `http://localhost` and `http://127.0.0.1`, on any port, as browsers serialise them. */
const LOOPBACK = /^http:\/\/(?:localhost|127\.0\.0\.1)(?::\d{1,5})?$/;

/** The `Origin` of a page that may call the API with credentials. */
export function isAllowedOrigin(origin: string | undefined, policy: CorsPolicy): boolean {
  if (origin === undefined) return false;
  return policy.origins.includes(origin) || (policy.allowLoopback && LOOPBACK.test(origin));
}

/**
 * Request headers browser clients send: JSON bodies, Bearer tokens, the account area's
 * CSRF header, Apollo Client's client awareness and CSRF-prevention headers (urql and
 * Apollo send nothing else of note; graphql-ws is a WebSocket, never preflighted), and
 * W3C trace context from browser instrumentation.
 */
export const ALLOWED_HEADERS = [
  'accept',
  'authorization',
  'content-type',
  'x-csrf-token',
  'apollographql-client-name',
  'apollographql-client-version',
  'x-apollo-operation-name',
  'apollo-require-preflight',
  'traceparent',
  'tracestate',
];

/** Response headers a client reads beyond the CORS-safelisted ones: rate limits and 401s. */
export const EXPOSED_HEADERS = ['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-cost-limit', 'x-cost-remaining', 'www-authenticate'];

/** How long a browser may reuse a preflight: 2 hours, Chromium's ceiling. */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** The API a browser app may call; everything else is same-origin only. */
function inScope(url: string): boolean {
  return url.startsWith('/api/') || url === '/graphql' || url.startsWith('/graphql?');
}

const isPreflight = (request: FastifyRequest) =>
  request.method === 'OPTIONS' && request.headers.origin !== undefined && request.headers['access-control-request-method'] !== undefined;

/**
 * The plugin's options are fixed, and only the origin is decided per request: a
 * per-request options delegator made the plugin rebuild its options on every request
 * (~8 µs each, docs/decisions.md). Where CORS applies is decided per route instead.
 */
async function cors(app: FastifyInstance, policy: CorsPolicy): Promise<void> {
  // Routes outside the API never carry CORS headers (the plugin skips `config.cors: false`).
  // The plugin's own catch-all OPTIONS route keeps it: that is where preflights land.
  app.addHook('onRoute', (route) => {
    if (route.url !== '*' && !inScope(route.url)) route.config = { ...route.config, cors: false } as typeof route.config;
  });
  // Before the plugin: an OPTIONS with an Origin that is not an API preflight is not the
  // plugin's to answer (it would call it a bad preflight). It gets what an unrouted request
  // gets: 404, or 405 on /graphql (src/http/not-found.ts).
  app.addHook('onRequest', (request, reply, done) => {
    if (request.method === 'OPTIONS' && request.headers.origin !== undefined && !(isPreflight(request) && inScope(request.url))) reply.callNotFound();
    else done();
  });
  await app.register(fastifyCors, {
    origin: (origin, callback) => callback(null, isAllowedOrigin(origin, policy)),
    credentials: true,
    methods: ['GET', 'POST'],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
  });
  // A preflight the plugin did not answer comes from another origin: refused outright, so
  // the refusal is plain in logs and to a developer's tools, not a 204 that looks like success.
  app.addHook('onRequest', (request, reply, done) => {
    if (isPreflight(request) && inScope(request.url)) refusePreflight(request, reply);
    else done();
  });
}

function refusePreflight(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const refusal = HTTP_REFUSALS.originNotAllowed;
  // Everything but the account area answers in GraphQL's shape here (docs/browser-apps.md).
  const body = refusalBody(request.url.startsWith('/api/') ? '/api' : '/graphql', refusal);
  return reply.code(refusal.status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** Registered at the root (fastify-plugin), before the routes' own hooks. */
export const corsPlugin = fp(cors, { name: 'inkwell-cors' });
