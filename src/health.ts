import type { FastifyInstance } from 'fastify';
import type { Backends } from './backends.js';

/**
 * `/healthz`: the process runs. `/readyz`: 503 when the database does not answer;
 * Redis being down only degrades (docs/operations.md): 200 with `status: "degraded"`,
 * so a load balancer keeps sending traffic to instances that can still serve it.
 */
export async function healthRoutes(app: FastifyInstance, backends: Backends): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const [database, redis] = await Promise.all([
      backends.db
        .ping()
        .then(() => 'up' as const)
        .catch(() => 'down' as const),
      backends.redisStatus?.(),
    ]);
    const status = database === 'up' && redis !== 'down' ? 'ok' : 'degraded';
    const body: Record<string, string> = { status, database };
    if (redis) body['redis'] = redis;
    return reply
      .code(database === 'up' ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(body);
  });
}
