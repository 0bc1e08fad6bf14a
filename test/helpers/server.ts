import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInkwell, type Inkwell } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';

export interface TestServer {
  url: string;
  inkwell: Inkwell;
  /** POSTs a GraphQL operation as JSON and returns status, headers and parsed body. */
  gql<T = any>(query: string, variables?: Record<string, unknown>, init?: GqlInit): Promise<GqlResponse<T>>;
  close(): Promise<void>;
}

export interface GqlInit {
  headers?: Record<string, string>;
  operationName?: string;
  extensions?: Record<string, unknown>;
}

export interface GqlResponse<T> {
  status: number;
  headers: Headers;
  body: { data?: T | null; errors?: { message: string; extensions?: { code?: string }; path?: (string | number)[] }[] };
}

export const TEST_SECRET = 'test-secret-that-is-at-least-32-bytes-long!';

/**
 * Starts the real service on a fresh SQLite file in a temporary folder, listening on
 * an ephemeral loopback port. Each test file gets its own.
 */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-test-'));
  const config = loadConfig({
    NODE_ENV: 'development',
    DATABASE_URL: `file:${join(dir, 'inkwell.db')}`,
    PORT: '0',
    HOST: '127.0.0.1',
    AUTH_SECRET: TEST_SECRET,
    BCRYPT_COST: '4',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SEED_DEMO_DATA: 'never',
    RATE_LIMIT_MAX: '100000',
    ...env,
  });
  const inkwell = await buildInkwell(config);
  await inkwell.app.listen({ port: 0, host: '127.0.0.1' });
  const address = inkwell.app.server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const url = `http://127.0.0.1:${address.port}`;

  return {
    url,
    inkwell,
    async gql(query, variables, init = {}) {
      const response = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...init.headers },
        body: JSON.stringify({ query, variables, operationName: init.operationName, extensions: init.extensions }),
      });
      return { status: response.status, headers: response.headers, body: (await response.json()) as GqlResponse<any>['body'] };
    },
    async close() {
      await inkwell.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
