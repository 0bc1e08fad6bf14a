import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildInkwell, type Inkwell } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { query } from './postgres.js';

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
 *
 * In the `postgres` test project (INKWELL_TEST_BACKEND=postgres, see vitest.config.ts)
 * the same server runs on a fresh PostgreSQL database of the shared test cluster, with
 * Redis for caches, counters, persisted queries and pub/sub under a key prefix of its
 * own; the database is dropped on close. An explicit DATABASE_URL or REDIS_URL in
 * `env` wins.
 */
export async function startServer(env: Record<string, string> = {}): Promise<TestServer> {
  return startServerListening({ PORT: '0', ...env }, 0);
}

/** The WebSocket endpoint of a test server (graphql-transport-ws at /graphql). */
export function wsUrl(server: Pick<TestServer, 'url'>): string {
  return `${server.url.replace(/^http/, 'ws')}/graphql`;
}

/**
 * An answer without its `extensions.cost` (docs/limits.md, "Cost"), for tests that compare
 * whole answers: the bucket's reading changes from one request to the next. Takes a
 * parsed body or `next` payload, or its JSON text as the service wrote it (the cost is
 * its last member); any other `extensions` stay.
 */
export function withoutCost<T>(answer: T): T {
  if (typeof answer === 'string') return answer.replace(COST_MEMBER, '}') as T;
  if (answer === null || typeof answer !== 'object' || !('extensions' in answer)) return answer;
  const { extensions, ...rest } = answer as { extensions?: Record<string, unknown> };
  if (!extensions || !('cost' in extensions)) return answer;
  const { cost: _cost, ...others } = extensions;
  return (Object.keys(others).length > 0 ? { ...rest, extensions: others } : rest) as T;
}

const COST_MEMBER = /,"extensions":\{"cost":\{"requestedQueryCost":[^{}]*"throttleStatus":\{[^{}]*\}\}\}\}$/;

/** Which backends the current test project runs on. */
export const testBackend: 'sqlite' | 'postgres' = process.env.INKWELL_TEST_BACKEND === 'postgres' ? 'postgres' : 'sqlite';

/** In the postgres project: a fresh database and a Redis key prefix for one server. */
async function testBackendEnv(env: Record<string, string>): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const postgresUrl = process.env.INKWELL_TEST_POSTGRES_URL;
  const redisUrl = process.env.INKWELL_TEST_REDIS_URL;
  if (process.env.INKWELL_TEST_BACKEND !== 'postgres' || !postgresUrl || !redisUrl) {
    return { env: {}, drop: async () => {} };
  }
  const id = randomBytes(6).toString('hex');
  const out: Record<string, string> = { REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `test-${id}:`, DATABASE_POOL_SIZE: '5' };
  let drop = async () => {};
  if (env.DATABASE_URL === undefined) {
    const name = `inkwell_${id}`;
    await query(postgresUrl, `create database ${name}`);
    const url = new URL(postgresUrl);
    url.pathname = `/${name}`;
    out.DATABASE_URL = url.toString();
    drop = async () => {
      await query(postgresUrl, `drop database if exists ${name} with (force)`).catch(() => {});
    };
  }
  return { env: out, drop };
}

/**
 * Like startServer, but on a known loopback port with PUBLIC_URL set to it, so OAuth
 * redirect URIs and callbackUrl origins are the real ones (the account-area tests).
 */
export async function startServerAt(env: Record<string, string> = {}, port?: number): Promise<TestServer> {
  const listenPort = port ?? (await freeLoopbackPort());
  const url = `http://127.0.0.1:${listenPort}`;
  const server = await startServerListening({ ...env, PORT: String(listenPort), PUBLIC_URL: env.PUBLIC_URL ?? url }, listenPort);
  return { ...server, url };
}

/** A free loopback port: the OS picks one, we release it, the caller takes it. */
export async function freeLoopbackPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Builds the service on a fresh database and listens on `port` (0: the OS picks one). */
async function startServerListening(env: Record<string, string>, port: number): Promise<TestServer> {
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-test-'));
  const backend = await testBackendEnv(env);
  const config = loadConfig({
    NODE_ENV: 'development',
    DATABASE_URL: `file:${join(dir, 'inkwell.db')}`,
    ...backend.env,
    HOST: '127.0.0.1',
    AUTH_SECRET: TEST_SECRET,
    BCRYPT_COST: '4',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    SEED_DEMO_DATA: 'never',
    RATE_LIMIT_MAX: '100000',
    // Tests send many operations from one caller in quick succession (costly ones too):
    // the default bucket (10,000 points, 200 a second) would answer some of them 429.
    // test/rate-limit/ sets its own.
    COST_LIMIT: '1000000000',
    // The test and the server share one event loop, and tests seed synchronously: load
    // shedding would answer their requests 503 (any threshold: a loop blocked for a whole
    // sample reads as infinite lag). test/http/overload.test.ts sets its own.
    OVERLOAD_EVENT_LOOP_DELAY_MS: '0',
    ...env,
  });
  let inkwell: Inkwell;
  try {
    inkwell = await buildInkwell(config);
    await inkwell.app.listen({ port, host: '127.0.0.1' });
  } catch (error) {
    await backend.drop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
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
      await backend.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
