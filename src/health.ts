import type { FastifyInstance } from 'fastify';
import type { Backends } from './backends.js';

/**
 * `/healthz`: the process runs. `/readyz`: 503 when the database does not answer;
 * Redis being down only degrades (SPEC section 1).
 */
export async function healthRoutes(app: FastifyInstance, backends: Backends): Promise<void> {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const database = await backends.db
      .ping()
      .then(() => 'up' as const)
      .catch(() => 'down' as const);
    const body: Record<string, string> = { status: database === 'up' ? 'ok' : 'degraded', database };
    return reply.code(database === 'up' ? 200 : 503).send(body);
  });
}
