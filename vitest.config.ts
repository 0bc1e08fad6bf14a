import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS and ESM builds without an exports map. Node (and every CJS
    // dependency such as graphql-jit) loads the CJS one; Vite would pick the ESM one,
    // and two copies of graphql refuse each other's schema. Pin the one Node uses.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // Each test file runs in its own process with its own SQLite file and servers.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more parallel files only make them slower and flakier.
    maxWorkers: 2,
  },
});
