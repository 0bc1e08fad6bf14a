import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Metrics } from './metrics.js';
import { RequestLog } from './request-log.js';
import { WsObserver } from './ws.js';

/**
 * One app's observability: its Prometheus registry and `GET /metrics`, the request
 * log (one line per request, feeding the duration histograms), and the WebSocket
 * observer. Tracing is process-wide and lives in tracing.ts / tracing-start.ts.
 * Built by src/app.ts; the routes reach the metrics as `app.metrics`.
 */

export interface ObservabilityOptions {
  /** Outside development `/metrics` needs the token; without one it does not exist (404). */
  env: 'development' | 'production' | 'test';
  metricsToken: string | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's metrics (src/observability/metrics.ts). */
    metrics: Metrics;
  }
}

export class Observability {
  readonly metrics = new Metrics();
  /** For `Fastify({ logController })`. */
  readonly logController = new RequestLog(this.metrics);

  constructor(private readonly options: ObservabilityOptions) {}

  /** Registered first, at the root: decorations every route sees, and `GET /metrics`. */
  readonly plugin = fp(async (app: FastifyInstance) => {
    app.decorate('metrics', this.metrics);
    app.decorateRequest('observation', null);
    const { env, metricsToken } = this.options;
    if (env !== 'development' && metricsToken === undefined) return;
    const expected = digest(metricsToken ?? '');
    app.get('/metrics', async (request, reply) => {
      if (env !== 'development' && !bearerMatches(request.headers.authorization, expected)) {
        return reply.code(401).header('www-authenticate', 'Bearer').send({ error: 'Unauthorized' });
      }
      const body = await this.metrics.render();
      return reply.header('content-type', this.metrics.contentType).header('cache-control', 'no-store').send(body);
    });
  });

  /** The WebSocket adapter's observer, logging through `log`. */
  webSocket(log: FastifyBaseLogger): WsObserver {
    return new WsObserver(this.metrics, log);
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Compared as SHA-256 digests in constant time: neither the token's bytes nor its length leak through timing. */
function bearerMatches(authorization: string | undefined, expected: Buffer): boolean {
  const match = authorization === undefined ? null : /^Bearer +(\S+) *$/i.exec(authorization);
  return match !== null && timingSafeEqual(digest(match[1]!), expected);
}

export { observe, cacheOutcomeOf } from './request.js';
export type { Metrics } from './metrics.js';
export type { WsObserver } from './ws.js';
