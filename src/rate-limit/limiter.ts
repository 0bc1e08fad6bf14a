import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../domain/caller.js';
import type { LimitDecision, RequestLimit } from './request-limit.js';

export type { LimitDecision } from './request-limit.js';

/**
 * Per-client request limits (docs/limits.md): RATE_LIMIT_MAX requests per
 * RATE_LIMIT_WINDOW_MS per client — the signed-in user, else the IP address — counted
 * per group (`graphql`, `auth`, `pages`). HTTP routes and the WebSocket decide with the
 * app's one RequestLimit (./request-limit.ts) on the same keys (`limiterKey`).
 */

export const TOO_MANY_REQUESTS = 'Too many requests';

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's request counts (./request-limit.ts), set by registerRateLimit. */
    requestLimit: RequestLimit;
  }
}

/** Makes the app's request counts reachable to every route's limiter (nothing is limited globally). */
export async function registerRateLimit(app: FastifyInstance, limit: RequestLimit): Promise<void> {
  app.decorate('requestLimit', limit);
}

export type Limiter = (request: FastifyRequest, reply: FastifyReply) => Promise<LimitDecision>;

/** One counted group; sets the `x-ratelimit-*` headers (and `retry-after` once over). */
export function createLimiter(
  app: FastifyInstance,
  options: { group: string; max: number; windowMs: number; clientKey: (request: FastifyRequest) => Promise<string> },
): Limiter {
  const limit = app.requestLimit;
  // One store of counts per app, so HTTP and WebSocket count alike: its limit must be this one.
  if (limit.max !== options.max || limit.windowMs !== options.windowMs) {
    throw new Error(`the ${options.group} limit differs from the app's request limit`);
  }
  return async (request, reply) => {
    const decision = await limit.decide(limiterKey(options.group, await options.clientKey(request)));
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

// IPv6 normalisation (to the /64) runs a long regex and an address parser: remembered per
// address. Only a memo of a pure function: an entry evicted is computed again, the same.
const normalizedIPv6 = new LRUCache<string, string>({ max: 10_000 });

/** The address a client is counted by: IPv4 as it is, IPv6 by its /64 (connection caps count by it too). */
export function normalizeIp(ip: string): string {
  // IPv4 (and 'unknown') comes through as it is; only IPv6 has a colon.
  if (!ip.includes(':')) return ip.toLowerCase();
  let normalized = normalizedIPv6.get(ip);
  if (normalized === undefined) {
    // @fastify/rate-limit's: the /64's first address (IPv4-mapped addresses as IPv4).
    normalized = fastifyRateLimit.normalizeIP(ip);
    normalizedIPv6.set(ip, normalized);
  }
  return normalized;
}

/** The counter of one client in one group (`graphql`, `auth`, …), shared by HTTP and WebSocket. */
export function limiterKey(group: string, client: string): string {
  return `${group}:${client}`;
}
