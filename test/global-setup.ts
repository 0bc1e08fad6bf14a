import type { TestProject } from 'vitest/node';
import { connectDatabase } from '../src/db/connect.js';
import { migrateToLatest } from '../src/db/migrate.js';
import { startPostgres } from './helpers/postgres.js';
import { startRedis } from './helpers/redis.js';

/**
 * The `postgres` test project's servers: ONE throwaway PostgreSQL cluster and ONE
 * redis-server on loopback for the whole run, stopped in teardown. Test files get
 * their own database (`CREATE DATABASE`) and Redis key prefix from the helpers, so
 * they never see each other's data. Fault tests start servers of their own.
 */
export default async function setup(project: TestProject) {
  const started = Date.now();
  const [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
  // Migrate template1, which every CREATE DATABASE copies: each test database starts
  // with the current schema and its migrator finds nothing to do (saves ~100 ms per
  // database). Tests of migrating itself create theirs from the empty template0.
  const template = connectDatabase({ kind: 'postgres', url: postgres.url.replace(/\/postgres$/, '/template1'), poolSize: 1 });
  try {
    await migrateToLatest(template);
  } finally {
    await template.close();
  }
  project.provide('postgresUrl', postgres.url);
  project.provide('redisUrl', redis.url);
  if (process.env.TEST_LOG_LEVEL) {
    console.log(`postgres ${postgres.url} and redis ${redis.url} up in ${Date.now() - started} ms`);
  }
  return async () => {
    await Promise.allSettled([postgres.destroy(), redis.destroy()]);
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string;
    redisUrl: string;
  }
}
