/**
 * The plain reference implementation of issue 11: what a competent team would write
 * in a day instead of Inkwell — Fastify + Mercurius (graphql-jit after one run) over
 * Inkwell's own schema (without subscriptions) and database, per-request DataLoaders,
 * prepared statements, the caller checked per request, and no response cache.
 *
 *   DATABASE_URL=file:…|postgres://… AUTH_SECRET=… PUBLIC_URL=<token issuer> PORT=… node bench/reference/server.mjs
 *
 * With REFERENCE_DATA=memory (a SQLite file) it reads the users into memory at start and
 * serves `user(id)` from there, touching no database: the hits bench (bench/hits/).
 *
 * It reads the tables Inkwell's migrations create and never migrates anything itself.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import mercurius from 'mercurius';
import { createAuth, REJECTED } from './auth.mjs';
import { createLoaders, resolvers } from './resolvers.mjs';
import { openStore } from './store.mjs';

const SCHEMA_FILE = new URL('../../src/graphql/schema.graphql', import.meta.url);

/** Inkwell's schema without its Subscription type (the reference serves HTTP only). */
function loadSchema() {
  return readFileSync(SCHEMA_FILE, 'utf8')
    .replace(/^\s*subscription: Subscription\s*$/m, '')
    .replace(/^type Subscription \{[\s\S]*?^\}/m, '');
}

function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
}

async function main() {
  const databaseUrl = required('DATABASE_URL');
  const store = openStore(databaseUrl, { poolSize: Number(process.env.DATABASE_POOL_SIZE ?? 10), memory: process.env.REFERENCE_DATA === 'memory' });
  const callerOf = createAuth({ secret: required('AUTH_SECRET'), issuer: required('PUBLIC_URL'), store });

  const app = Fastify({ logger: { level: process.env.LOG_LEVEL ?? 'info' } });
  app.get('/healthz', async () => ({ status: 'ok' }));
  // The caller once per request, before Mercurius; a refused credential is a 401.
  app.decorateRequest('caller', null);
  app.addHook('preHandler', async (request, reply) => {
    if (request.url !== '/graphql' && !request.url.startsWith('/graphql?')) return;
    const caller = await callerOf(request.headers.authorization);
    if (caller === REJECTED) {
      const errors = [{ message: 'Invalid or expired credentials', extensions: { code: 'UNAUTHENTICATED' } }];
      return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').send({ errors });
    }
    request.caller = caller;
  });
  await app.register(mercurius, {
    schema: loadSchema(),
    resolvers,
    jit: 1,
    queryDepth: 7, // Inkwell's default QUERY_MAX_DEPTH
    graphiql: false,
    context: (request) => {
      const caller = request.caller;
      return { caller, store, loaders: createLoaders(store, caller) };
    },
  });
  await app.listen({ host: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 4100) });

  const stop = async () => {
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((error) => {
  console.error(`[reference] ${error?.stack ?? error}`);
  process.exit(1);
});
