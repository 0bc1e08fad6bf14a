import { inject } from 'vitest';

/**
 * Runs before every test file of both projects. The `postgres` project hands the URLs
 * of its shared servers to the helpers through the environment (test/domain/helpers.ts
 * reads INKWELL_TEST_POSTGRES_URL, test/helpers/server.ts both); the `sqlite` project
 * clears them, in case a worker process ran a file of the other project before.
 */
if (process.env.INKWELL_TEST_BACKEND === 'postgres') {
  process.env.INKWELL_TEST_POSTGRES_URL = inject('postgresUrl');
  process.env.INKWELL_TEST_REDIS_URL = inject('redisUrl');
} else {
  delete process.env.INKWELL_TEST_POSTGRES_URL;
  delete process.env.INKWELL_TEST_REDIS_URL;
}
