import Fastify, { type FastifyInstance } from 'fastify';
import { createBackends, type Backends } from './backends.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { setupAuth } from './auth/index.js';
import { serializeRequest } from './auth/log.js';
import type { AuthService } from './auth/service.js';
import { demoSignInNote, seedDemoData } from './domain/seed.js';
import { createServices, type Services } from './domain/services.js';
import { graphiqlAssetsPlugin } from './graphiql/plugin.js';
import { ResponseCache } from './cache/response-cache.js';
import { graphqlHttpRoutes, methodNotAllowed } from './graphql/http/route.js';
import { PersistedQueries, loadManifest } from './graphql/operation/persisted.js';
import { OperationPipeline } from './graphql/operation/pipeline.js';
import { HeavyLine } from './graphql/operation/heavy.js';
import { RequestCore } from './graphql/operation/core.js';
import { RequestPreparer } from './graphql/operation/request.js';
import { CostBucket } from './rate-limit/cost-bucket.js';
import { createSubscriptionResolvers } from './graphql/resolvers/subscription.js';
import { buildSchema } from './graphql/schema.js';
import { attachGraphqlWs, type GraphqlWsServer } from './graphql/ws/server.js';
import { graphqlSse } from './graphql/sse/server.js';
import { healthRoutes } from './health.js';
import { corsPlugin } from './http/cors.js';
import { ConnectionCaps } from './http/connection-caps.js';
import { drainOnClose } from './http/drain.js';
import { httpHygiene } from './http/hygiene.js';
import { overloadPlugin } from './http/overload.js';
import { AUTH_COOKIE, REFRESH_COOKIE } from './auth/cookies.js';
import { cutSlowReaders } from './http/send-timeout.js';
import { setNotFound } from './http/not-found.js';
import { Observability } from './observability/index.js';
import { logStreamFor } from './observability/pretty.js';

export interface Inkwell {
  app: FastifyInstance;
  config: Config;
  backends: Backends;
  services: Services;
  pipeline: OperationPipeline;
  /** Whole responses of queries; undefined when RESPONSE_CACHE_MB=0. */
  responseCache: ResponseCache | undefined;
  /** GraphQL over WebSocket at /graphql (subscriptions). */
  realtime: GraphqlWsServer;
  /** The account area: sessions, tokens, callers (src/auth). */
  auth: AuthService;
  /** Metrics, request logs, WebSocket observation (src/observability). */
  observability: Observability;
  /**
   * Stops accepting work, lets in-flight requests finish, then closes the backends.
   * `lingerMs`: how long idle keep-alive connections may still bring a request (src/http/drain.ts).
   */
  close(options?: { lingerMs?: number }): Promise<void>;
}

/** Secrets and credentials never reach the log (docs/operations.md). */
const redact = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.accessToken',
  '*.refreshToken',
];

/** Builds the whole service from configuration: backends, schema, pipeline, routes. */
export async function buildInkwell(config: Config): Promise<Inkwell> {
  const backends = createBackends(config);
  await backends.ready();
  const migrated = await migrateToLatest(backends.db);
  const seeded = config.seedDemoData && (await seedDemoData(backends.db, { bcryptCost: config.bcryptCost }));

  const services = createServices(backends);
  const schema = buildSchema({ Subscription: createSubscriptionResolvers(backends.pubsub) });
  const pipeline = new OperationPipeline(schema, { limits: config.limits, introspection: !config.isProduction });
  const manifest = config.persistedQueriesManifest ? loadManifest(config.persistedQueriesManifest) : undefined;
  // The fallback store: while Redis is down, hashes register per instance (clients resend the text).
  const persisted = new PersistedQueries(backends.persisted, config.persistedQueries, manifest, { maxBytes: config.persistedQueriesBytes });

  const responseCache = config.responseCacheBytes > 0 ? new ResponseCache(backends.versions, config.responseCacheBytes) : undefined;
  const heavy = new HeavyLine({
    minCost: config.heavy.minCost,
    concurrency: config.heavy.concurrency,
    queue: config.heavy.queue,
    waitMs: config.heavy.waitMs,
  });
  const preparer = new RequestPreparer(pipeline, persisted, responseCache, heavy);

  const observability = new Observability({ env: config.env, metricsToken: config.metricsToken });

  const app = Fastify({
    logger: { level: config.logLevel, redact, serializers: { req: serializeRequest }, ...(await logStreamFor()) }, // observability: pretty on a terminal
    logController: observability.logController, // observability: one line per request, and the duration metrics
    // Behind a proxy the client address comes from X-Forwarded-For (rate limits use it).
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // A head or body still arriving this long after its first byte is answered 408,
    // however slowly it trickles; checked often enough to keep to it (docs/limits.md).
    requestTimeout: config.httpRequestTimeoutMs,
    http: {
      headersTimeout: config.httpRequestTimeoutMs,
      requestTimeout: config.httpRequestTimeoutMs,
      connectionsCheckingInterval: Math.min(1_000, Math.max(100, Math.floor(config.httpRequestTimeoutMs / 10))),
    },
  });
  const connections = drainOnClose(app);
  cutSlowReaders(app, config.httpSendTimeoutMs); // a client that accepts no bytes is cut (docs/limits.md)
  // Long-lived connections per client address and per instance: WebSocket (and SSE) count here.
  const connectionCaps = new ConnectionCaps(config.connections);

  if (migrated.length > 0) app.log.info({ migrations: migrated }, 'database migrated');
  if (seeded) app.log.info(demoSignInNote(config.publicUrl)); // outside production only (config.seedDemoData)
  // First at the root: a duplicate Host is refused, a credential's answer marked private.
  httpHygiene(app, { credentialCookies: [AUTH_COOKIE, REFRESH_COOKIE] });
  // Then preflights, answered before rate limits and authentication.
  await app.register(corsPlugin, config.cors);
  setNotFound(app, { '/graphql': methodNotAllowed });
  await app.register(observability.plugin); // observability: GET /metrics, app.metrics, request.observation
  observability.metrics.watchPool(() => backends.db.poolUse()); // observability:
  observability.metrics.watchHeavy(() => heavy.stats); // observability:
  await app.register(overloadPlugin, { maxEventLoopDelayMs: config.overloadEventLoopDelayMs });
  await app.register(healthRoutes, { backends, overloaded: () => app.isUnderPressure() });
  const auth = await setupAuth(app, { config, backends, services });
  observability.metrics.watchPasswordHashing(() => auth.auth.hasher.stats); // observability:
  if (!config.isProduction) await app.register(graphiqlAssetsPlugin);
  // The request core: one way through for every transport (src/graphql/operation/core.ts).
  // Each caller's bucket of query cost: in Redis when configured, else (and while it fails) in this process.
  let costErrorLogged = 0;
  const costBucket = new CostBucket(
    config.cost,
    backends.redis && { client: backends.redis, keyPrefix: `${config.redisKeyPrefix}cost:` },
    (error) => {
      // At most one line per 10 s: while Redis stalls, every operation's call fails.
      if (Date.now() - costErrorLogged < 10_000) return;
      costErrorLogged = Date.now();
      app.log.warn({ err: error instanceof Error ? error.message : String(error) }, 'cost bucket: Redis call failed; counting in this instance');
    },
  );
  const core = new RequestCore({
    schema,
    preparer,
    services,
    responseCache,
    limit: auth.auth.requestLimit,
    cost: costBucket,
    onCostRefused: (transport, reason) => observability.metrics.costRefused(transport, reason), // observability:
  });
  // GraphQL over SSE at the same path: the route hands it the requests that prefer an event stream.
  const sse = graphqlSse(app, { core, schema, services, isProduction: config.isProduction, caps: connectionCaps, identify: auth.identify, refuseCredential: auth.refuseCredential });
  await app.register(graphqlHttpRoutes, {
    core,
    isProduction: config.isProduction,
    identify: auth.identify,
    refuseCredential: auth.refuseCredential,
    eventStream: sse.serve,
  });
  const realtime = attachGraphqlWs(app.server, {
    pipeline,
    core,
    services,
    isProduction: config.isProduction,
    log: app.log,
    observability: observability.webSocket(app.log), // observability:
    publicUrl: config.publicUrl,
    cors: config.cors,
    trustProxy: config.trustProxy,
    caps: connectionCaps,
    overloaded: () => app.isUnderPressure(),
    identify: (credential) => auth.auth.callers.fromCredential(credential),
  });
  observability.metrics.watchWebSocket(realtime.stats); // observability:
  // Open sockets would keep the HTTP server from closing: they go first, with 1001.
  app.addHook('preClose', () => realtime.close());

  return {
    app,
    config,
    backends,
    services,
    pipeline,
    responseCache,
    realtime,
    auth: auth.auth,
    observability,
    async close({ lingerMs = 0 } = {}) {
      // WebSockets get their 1001 and event streams their `complete` while HTTP connections drain.
      await Promise.all([realtime.close(), sse.close(), connections.drain(lingerMs)]);
      await app.close();
      await backends.close();
    },
  };
}
