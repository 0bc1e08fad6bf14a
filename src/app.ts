import Fastify, { type FastifyInstance } from 'fastify';
import { createBackends, type Backends } from './backends.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { seedDemoData } from './db/seed.js';
import { setupAuth } from './auth/index.js';
import { serializeRequest } from './auth/log.js';
import { clientKey, limiterKey } from './auth/rate-limit.js';
import type { AuthService } from './auth/service.js';
import { createServices, type Services } from './domain/services.js';
import { CacheProbe } from './graphql/cache-probe.js';
import { cachedQueryAnswer } from './graphql/front-answer.js';
import { graphqlHttpPlugin } from './graphql/http.js';
import { PersistedQueries, loadManifest } from './graphql/persisted.js';
import { OperationPipeline } from './graphql/pipeline.js';
import { ResponseCache } from './graphql/response-cache.js';
import { createSubscriptionResolvers } from './graphql/resolvers/subscription.js';
import { buildSchema } from './graphql/schema.js';
import { attachGraphqlWs, type GraphqlWsServer } from './graphql/ws.js';
import { healthRoutes } from './health.js';
import { FrontDoor } from './http/front-door.js';
import { Observability } from './observability/index.js';
import { logStreamFor } from './observability/pretty.js';

export interface Inkwell {
  app: FastifyInstance;
  config: Config;
  backends: Backends;
  services: Services;
  pipeline: OperationPipeline;
  /** GraphQL over WebSocket at /graphql (subscriptions). */
  realtime: GraphqlWsServer;
  /** The account area: sessions, tokens, callers (src/auth). */
  auth: AuthService;
  /** Answers anonymous cached queries before node:http and Fastify (src/http/front-door.ts). */
  front: FrontDoor;
  /** Metrics, request logs, WebSocket observation (src/observability). */
  observability: Observability;
  /** Stops accepting work, lets in-flight requests finish, then closes the backends. */
  close(): Promise<void>;
}

/** Secrets and credentials never reach the log (SPEC: no passwords or tokens in logs). */
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
  if (config.seedDemoData) await seedDemoData(backends.db, { bcryptCost: config.bcryptCost });

  const services = createServices(backends);
  const schema = buildSchema({ Subscription: createSubscriptionResolvers(backends.pubsub) });
  const pipeline = new OperationPipeline(schema, { limits: config.limits, introspection: !config.isProduction });
  const manifest = config.persistedQueriesManifest ? loadManifest(config.persistedQueriesManifest) : undefined;
  // The fallback store: while Redis is down, hashes register per instance (clients resend the text).
  const persisted = new PersistedQueries(backends.counters, config.persistedQueries, manifest);

  const responseCache = config.responseCacheBytes > 0 ? new ResponseCache(backends.dataVersion, config.responseCacheBytes) : undefined;
  const front = new FrontDoor();
  const observability = new Observability({ env: config.env, metricsToken: config.metricsToken });

  const app = Fastify({
    serverFactory: front.serverFactory,
    logger: { level: config.logLevel, redact, serializers: { req: serializeRequest }, ...(await logStreamFor()) }, // observability: pretty on a terminal
    logController: observability.logController, // observability: one line per request, and the duration metrics
    // Behind a proxy the client address comes from X-Forwarded-For (rate limits use it).
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  if (migrated.length > 0) app.log.info({ migrations: migrated }, 'database migrated');
  await app.register(observability.plugin); // observability: GET /metrics, app.metrics, request.observation
  observability.metrics.watchPool(() => backends.db.poolUse()); // observability:
  await app.register(healthRoutes, backends);
  const auth = await setupAuth(app, { config, backends, services });
  await app.register(graphqlHttpPlugin, {
    pipeline,
    services,
    persisted,
    responseCache,
    isProduction: config.isProduction,
    authenticate: auth.authenticate,
    preHandler: auth.graphqlPreHandler,
  });
  const realtime = attachGraphqlWs(app.server, {
    pipeline,
    services,
    persisted,
    isProduction: config.isProduction,
    log: app.log,
    observability: observability.webSocket(app.log), // observability:
    publicUrl: config.publicUrl,
    trustProxy: config.trustProxy,
    authenticateToken: async (token) => (await auth.auth.callers.fromToken(token)).caller,
    // Queries and mutations over the socket count on the /graphql limiter's own key and counters.
    limitOperation: async ({ caller, ip }) => {
      const { count } = await auth.auth.counters.hit(limiterKey('graphql', clientKey(caller, ip)), config.rateLimit.windowMs);
      return count <= config.rateLimit.max;
    },
  });
  observability.metrics.watchWebSocket(realtime.stats); // observability:
  // Open sockets would keep the HTTP server from closing: they go first, with 1001.
  app.addHook('preClose', () => {
    front.close();
    return realtime.close();
  });
  if (responseCache) {
    const answer = cachedQueryAnswer({
      probe: new CacheProbe(pipeline, persisted, responseCache),
      cache: responseCache,
      counters: auth.auth.counters,
      rateLimit: config.rateLimit,
      trustProxy: config.trustProxy,
      isProduction: config.isProduction,
    });
    front.open(answer, app.log);
    observability.metrics.countHitsAnsweredElsewhere(() => front.answered); // observability: goes with the front door
  }

  return {
    app,
    config,
    backends,
    services,
    pipeline,
    realtime,
    auth: auth.auth,
    front,
    observability,
    async close() {
      await app.close();
      await backends.close();
    },
  };
}
