import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../domain/caller.js';
import { rateLimitStore, type Counters } from './counters.js';

/**
 * Per-client request limits (docs/limits.md): RATE_LIMIT_MAX requests per
 * RATE_LIMIT_WINDOW_MS per client — the signed-in user, else the IP address — counted
 * per group (`graphql`, `auth`, `pages`). HTTP goes through @fastify/rate-limit on the
 * shared counters; the WebSocket counts on the same keys (`limiterKey`).
 */

export const TOO_MANY_REQUESTS = 'Too many requests';

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  retryAfterSeconds: number;
}

/** Registers @fastify/rate-limit (routes opt in; nothing is limited globally) with the shared counters. */
export async function registerRateLimit(app: FastifyInstance, counters: Counters): Promise<void> {
  await app.register(fastifyRateLimit, { global: false, store: rateLimitStore(counters), skipOnError: false });
}

export type Limiter = (request: FastifyRequest, reply: FastifyReply) => Promise<LimitDecision>;

/** One counted group; sets the `x-ratelimit-*` headers (and `retry-after` once over). */
export function createLimiter(
  app: FastifyInstance,
  options: { group: string; max: number; windowMs: number; clientKey: (request: FastifyRequest) => Promise<string> },
): Limiter {
  const limit = app.createRateLimit({
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: async (request) => limiterKey(options.group, await options.clientKey(request)),
  });
  return async (request, reply) => {
    const result = await limit(request);
    if (result.isAllowed) return { allowed: true, limit: options.max, remaining: options.max, retryAfterSeconds: 0 };
    const decision: LimitDecision = {
      allowed: !result.isExceeded,
      limit: result.max,
      remaining: result.remaining,
      retryAfterSeconds: Math.max(1, result.ttlInSeconds),
    };
    reply.headers(limitHeaders(decision));
    return decision;
  };
}

/** The headers every limited response carries; `retry-after` once over the limit. */
export function limitHeaders(decision: LimitDecision): Record<string, number> {
  const headers: Record<string, number> = {
    'x-ratelimit-limit': decision.limit,
    'x-ratelimit-remaining': decision.remaining,
    'x-ratelimit-reset': decision.retryAfterSeconds,
  };
  if (!decision.allowed) headers['retry-after'] = decision.retryAfterSeconds;
  return headers;
}

/** The client a limit counts for: the signed-in user, else the IP address (an IPv6 client by its /64). */
export function clientKey(caller: Caller, ip: string): string {
  return caller.kind === 'user' ? `user:${caller.id}` : `ip:${normalizeIp(ip)}`;
}

// IPv6 normalisation (to the /64) runs a long regex and an address parser: remembered per address.
const normalizedIPv6 = new LRUCache<string, string>({ max: 10_000 });

/** The address a client is counted by: IPv4 as it is, IPv6 by its /64 (connection caps count by it too). */
export function normalizeIp(ip: string): string {
  // IPv4 (and 'unknown') comes through as it is; only IPv6 has a colon.
  if (!ip.includes(':')) return ip.toLowerCase();
  let normalized = normalizedIPv6.get(ip);
  if (normalized === undefined) {
    normalized = fastifyRateLimit.normalizeIP(ip);
    normalizedIPv6.set(ip, normalized);
  }
  return normalized;
}

/** The counter of one client in one group (`graphql`, `auth`, …), shared by HTTP and WebSocket. */
export function limiterKey(group: string, client: string): string {
  return `${group}:${client}`;
}
