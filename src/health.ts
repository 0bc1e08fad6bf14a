import type { FastifyInstance } from 'fastify';
import type { Backends } from './backends.js';

/**
 * `/healthz`: the process runs. `/readyz`: 503 when the database does not answer or
 * the process is shedding load (src/http/overload.ts);
 * Redis being down only degrades (docs/operations.md): 200 with `status: "degraded"`,
 * so a load balancer keeps sending traffic to instances that can still serve it.
 * A dependency that stalls rather than fails counts as down after CHECK_TIMEOUT_MS:
 * the probe itself never hangs, and probes never pile up on a stalled database.
 */

/** How long /readyz waits for each dependency before calling it down. */
export const CHECK_TIMEOUT_MS = 2_000;

type State = 'up' | 'down';

export interface HealthOptions {
  backends: Backends;
  /** True while the process sheds new requests (src/http/overload.ts): not ready. */
  overloaded(): boolean;
}

export async function healthRoutes(app: FastifyInstance, { backends, overloaded }: HealthOptions): Promise<void> {
  // One check of each kind in flight at a time: probes arriving while the database is
  // stalled wait on the same `select 1` instead of each taking a pooled connection.
  const database = singleFlight(() => backends.db.ping().then(() => 'up' as const));
  const redis = backends.redisStatus ? singleFlight(backends.redisStatus) : undefined;

  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const [db, cache] = await Promise.all([within(database(), CHECK_TIMEOUT_MS), redis && within(redis(), CHECK_TIMEOUT_MS)]);
    const busy = overloaded();
    const status = db === 'up' && cache !== 'down' && !busy ? 'ok' : 'degraded';
    const body: Record<string, string> = { status, database: db };
    if (cache) body['redis'] = cache;
    if (busy) body['overloaded'] = 'yes';
    return reply
      .code(db === 'up' && !busy ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(body);
  });
}

function singleFlight(check: () => Promise<State>): () => Promise<State> {
  let inFlight: Promise<State> | undefined;
  return () =>
    (inFlight ??= check()
      .catch(() => 'down' as const)
      .finally(() => (inFlight = undefined)));
}

/** The check's answer, or 'down' when it has not answered in time. */
async function within(check: Promise<State>, ms: number): Promise<State> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<State>((resolve) => (timer = setTimeout(() => resolve('down'), ms)));
  try {
    return await Promise.race([check, late]);
  } finally {
    clearTimeout(timer);
  }
}
