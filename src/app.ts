import Fastify, { type FastifyInstance } from 'fastify';
import { createBackends, type Backends } from './backends.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { setupAuth } from './auth/index.js';
import { serializeRequest } from './auth/log.js';
import type { AuthService } from './auth/service.js';
import { seedDemoData } from './domain/seed.js';
import { createServices, type Services } from './domain/services.js';
import { ResponseCache } from './graphql/cache/response-cache.js';
import { graphqlHttpRoutes } from './graphql/http/route.js';
import { PersistedQueries, loadManifest } from './graphql/operation/persisted.js';
import { OperationPipeline } from './graphql/operation/pipeline.js';
import { RequestPreparer } from './graphql/operation/request.js';
import { createSubscriptionResolvers } from './graphql/resolvers/subscription.js';
import { buildSchema } from './graphql/schema.js';
import { attachGraphqlWs, type GraphqlWsServer } from './graphql/ws/server.js';
import { healthRoutes } from './health.js';
import { clientKey, limiterKey } from './rate-limit/limiter.js';

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
  /** Stops accepting work, lets in-flight requests finish, then closes the backends. */
  close(): Promise<void>;
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
  if (config.seedDemoData) await seedDemoData(backends.db, { bcryptCost: config.bcryptCost });

  const services = createServices(backends);
  const schema = buildSchema({ Subscription: createSubscriptionResolvers(backends.pubsub) });
  const pipeline = new OperationPipeline(schema, { limits: config.limits, introspection: !config.isProduction });
  const manifest = config.persistedQueriesManifest ? loadManifest(config.persistedQueriesManifest) : undefined;
  // The fallback store: while Redis is down, hashes register per instance (clients resend the text).
  const persisted = new PersistedQueries(backends.counters, config.persistedQueries, manifest);

  const responseCache = config.responseCacheBytes > 0 ? new ResponseCache(backends.versions, config.responseCacheBytes) : undefined;
  const preparer = new RequestPreparer(pipeline, persisted, responseCache);

  const app = Fastify({
    logger: { level: config.logLevel, redact, serializers: { req: serializeRequest } },
    // Behind a proxy the client address comes from X-Forwarded-For (rate limits use it).
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  if (migrated.length > 0) app.log.info({ migrations: migrated }, 'database migrated');
  await app.register(healthRoutes, backends);
  const auth = await setupAuth(app, { config, backends, services });
  await app.register(graphqlHttpRoutes, {
    preparer,
    services,
    responseCache,
    isProduction: config.isProduction,
    rateLimit: config.rateLimit,
    authenticate: auth.authenticate,
  });
  const realtime = attachGraphqlWs(app.server, {
    pipeline,
    preparer,
    services,
    responseCache,
    isProduction: config.isProduction,
    log: app.log,
    publicUrl: config.publicUrl,
    trustProxy: config.trustProxy,
    authenticateToken: async (token) => (await auth.auth.callers.fromToken(token)).caller,
    // Queries and mutations over the socket count on the /graphql limiter's own key and counters.
    limitOperation: async ({ caller, ip }) => {
      const { count } = await auth.auth.counters.hit(limiterKey('graphql', clientKey(caller, ip)), config.rateLimit.windowMs);
      return count <= config.rateLimit.max;
    },
  });
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
    async close() {
      await app.close();
      await backends.close();
    },
  };
}
