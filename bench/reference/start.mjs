/** Starts the reference (bench/reference/server.mjs) as a child process, production-like, like lib/service.mjs does for Inkwell. */
import { fileURLToPath } from 'node:url';
import { forkTracked, stopChild } from '../lib/children.mjs';
import { BENCH_AUTH_SECRET, ROOT, freePort, waitUntilReady } from '../lib/service.mjs';

const SERVER = fileURLToPath(new URL('./server.mjs', import.meta.url));
/**
 * The reference's PostgreSQL connections: as many as Inkwell's two pools of its default
 * DATABASE_POOL_SIZE (10 for reads, 10 for writes), in its one pool.
 */
export const REFERENCE_POOL_SIZE = 20;

/** databaseUrl: `file:…` or `postgres://…`; issuer: the PUBLIC_URL Inkwell signs its tokens with. */
export async function startReference({ databaseUrl, issuer, env = {}, nodeArgs = [], readyTimeoutMs = 30_000 }) {
  const port = await freePort();
  const child = forkTracked(SERVER, [], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      AUTH_SECRET: BENCH_AUTH_SECRET,
      PUBLIC_URL: issuer,
      DATABASE_POOL_SIZE: String(REFERENCE_POOL_SIZE),
      ...env,
    },
    execArgv: nodeArgs,
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilReady(child, `${url}/healthz`, readyTimeoutMs);
  return { url, graphqlUrl: `${url}/graphql`, port, child, stop: (graceMs = 10_000) => stopChild(child, graceMs) };
}
