import underPressure from '@fastify/under-pressure';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { getHeapStatistics } from 'node:v8';
import { HTTP_REFUSALS, refusalBody } from '../errors.js';

/**
 * Overload shedding (docs/limits.md, "Overload"): while the event loop lags more than
 * `OVERLOAD_EVENT_LOOP_DELAY_MS` on average over a second, or the heap passes 90 % of
 * its limit, new requests answer 503 `OVERLOADED` with `Retry-After` at their first
 * hook, before any work, so the requests already admitted can finish. `@fastify/under-pressure`
 * samples both once a second. `/healthz` and `/metrics` still answer (the process is
 * alive and operators need to see why); `/readyz` answers 503 so a load balancer sends
 * traffic elsewhere until the process recovers.
 */

/** Share of V8's heap limit above which new requests are shed. */
const HEAP_SHARE = 0.9;
/** Seconds a client is asked to wait while the heap is near its limit (a collection, a drain). */
const HEAP_RETRY_AFTER_S = 5;

const ALWAYS_ANSWERED = new Set(['/healthz', '/metrics', '/readyz']);

export interface OverloadOptions {
  maxEventLoopDelayMs: number;
  /** Heap bytes above which requests are shed; default 90 % of V8's heap limit. */
  maxHeapUsedBytes?: number;
}

/** At the root (fastify-plugin), so its first hook covers every route. */
export const overloadPlugin = fp(async function overload(app: FastifyInstance, options: OverloadOptions): Promise<void> {
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    maxHeapUsedBytes: options.maxHeapUsedBytes ?? Math.floor(getHeapStatistics().heap_size_limit * HEAP_SHARE),
    // Answered here; Fastify runs nothing further for a sent reply.
    pressureHandler: (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => {
      if (ALWAYS_ANSWERED.has(pathOf(request))) return; // served; /readyz says 503 itself
      const seconds = type === 'eventLoopDelay' && value ? Math.max(1, Math.ceil(value / 1000)) : HEAP_RETRY_AFTER_S;
      request.server.metrics.graphqlError(HTTP_REFUSALS.overloaded.code); // observability:
      sendOverloaded(request, reply, seconds);
    },
  });
});

/** 503 `OVERLOADED` in the body shape of the area asked: `{errors}` on /graphql, `{error}` elsewhere. */
function sendOverloaded(request: FastifyRequest, reply: FastifyReply, retryAfterSeconds: number): void {
  const refusal = HTTP_REFUSALS.overloaded;
  const body = refusalBody(pathOf(request), refusal, true);
  void reply
    .code(refusal.status)
    .header('retry-after', String(retryAfterSeconds))
    .header('cache-control', 'no-store')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(body));
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?', 1)[0] ?? '';
}
