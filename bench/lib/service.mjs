/** Starts the built service (`dist/main.js`) as a child process, configured like production. */
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forkTracked, stopChild } from './children.mjs';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** A port nobody listens on right now (the OS picks it). */
export function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** AUTH_SECRET of every bench service (the reference verifies Inkwell's access tokens with it). */
export const BENCH_AUTH_SECRET = 'bench-secret-bench-secret-bench-secret-0123456789';

/** The environment of a bench run: production, quiet logs, limits that do not interfere. */
export function serviceEnv({ dbFile, port, env = {} }) {
  return {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATABASE_URL: `file:${dbFile}`,
    AUTH_SECRET: BENCH_AUTH_SECRET,
    LOG_LEVEL: 'warn',
    SEED_DEMO_DATA: 'never',
    QUERY_MAX_COMPLEXITY: '5000',
    RATE_LIMIT_MAX: '1000000000',
    // Every bench client is one caller (or a few): the cost bucket must not refuse the load.
    COST_LIMIT: '1000000000',
    // Every bench client connects from one address (fan-out: 5,000 WebSockets).
    WS_MAX_CONNECTIONS_PER_CLIENT: '0',
    BCRYPT_COST: '10',
    ...env,
  };
}

/**
 * Forks `node [nodeArgs] dist/main.js` and resolves once GET /healthz answers 200.
 * Returns { url, graphqlUrl, port, child, stop() }; stop() sends SIGTERM (the service
 * drains and exits, which is also when `--cpu-prof` writes its profile).
 * `root`: another built checkout to run instead of this one (its own dist/main.js,
 * e.g. a baseline build for comparison; it ignores configuration it does not know).
 */
export async function startService({ dbFile, env = {}, nodeArgs = [], readyTimeoutMs = 30_000, root } = {}) {
  if (!dbFile) throw new Error('startService: dbFile is required');
  const main = root ? join(resolve(root), 'dist', 'main.js') : MAIN;
  if (!existsSync(main)) throw new Error(`${main} is missing: build that checkout first`);
  const port = await freePort();
  const child = forkTracked(main, [], {
    cwd: root ? resolve(root) : ROOT,
    env: serviceEnv({ dbFile, port, env }),
    execArgv: nodeArgs,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilReady(child, `${url}/healthz`, readyTimeoutMs);
  return {
    url,
    graphqlUrl: `${url}/graphql`,
    port,
    child,
    stop: (graceMs = 15_000) => stopChild(child, graceMs),
  };
}

/** Resolves once `healthUrl` answers 200; rejects when the child exits first or after `timeoutMs`. */
export async function waitUntilReady(child, healthUrl, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the service exited (${child.signalCode ?? child.exitCode}) during start-up`);
    }
    try {
      const response = await fetch(healthUrl);
      await response.arrayBuffer();
      if (response.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`the service did not become ready within ${timeoutMs} ms`);
}

/** The JSON POST every scenario sends: same headers for the service and the ceiling. */
export const REQUEST_HEADERS = { 'content-type': 'application/json' };

/** One GraphQL request; returns the exact response bytes and content-type. */
export async function postGraphQL(graphqlUrl, body) {
  const response = await fetch(graphqlUrl, { method: 'POST', headers: REQUEST_HEADERS, body });
  const bytes = Buffer.from(await response.arrayBuffer());
  return { status: response.status, contentType: response.headers.get('content-type'), bytes };
}
