import Fastify, { type FastifyInstance } from 'fastify';
import { createBackends, type Backends } from './backends.js';
import type { Config } from './config.js';
import { migrateToLatest } from './db/migrate.js';
import { seedDemoData } from './db/seed.js';
import { ANONYMOUS } from './domain/caller.js';
import { createServices, type Services } from './domain/services.js';
import { graphqlHttpPlugin } from './graphql/http.js';
import { PersistedQueries, loadManifest } from './graphql/persisted.js';
import { OperationPipeline } from './graphql/pipeline.js';
import { buildSchema } from './graphql/schema.js';
import { healthRoutes } from './health.js';

export interface Inkwell {
  app: FastifyInstance;
  config: Config;
  backends: Backends;
  services: Services;
  pipeline: OperationPipeline;
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
  await migrateToLatest(backends.db);
  if (config.seedDemoData) await seedDemoData(backends.db, { bcryptCost: config.bcryptCost });

  const services = createServices(backends);
  const schema = buildSchema();
  const pipeline = new OperationPipeline(schema, { limits: config.limits, introspection: !config.isProduction });
  const manifest = config.persistedQueriesManifest ? loadManifest(config.persistedQueriesManifest) : undefined;
  const persisted = new PersistedQueries(backends.kv, config.persistedQueries, manifest);

  const app = Fastify({
    logger: { level: config.logLevel, redact },
    // Behind a proxy the client address comes from X-Forwarded-For (rate limits use it).
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  });

  await app.register(healthRoutes, backends);
  await app.register(graphqlHttpPlugin, {
    pipeline,
    services,
    persisted,
    isProduction: config.isProduction,
    authenticate: async () => ANONYMOUS,
  });

  return {
    app,
    config,
    backends,
    services,
    pipeline,
    async close() {
      await app.close();
      await backends.close();
    },
  };
}
