import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import fastifyRateLimit from '@fastify/rate-limit';
import { LRUCache } from 'lru-cache';
import type { Caller } from '../domain/caller.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { KeyValueStore } from '../store/kv.js';
import { MemoryStore } from '../store/memory.js';

/**
 * Rate limiting (SPEC section 6): RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW_MS per
 * client — the signed-in user, else the IP address — counted separately for `/graphql`
 * and `/api/auth/*`; plus a stricter throttle on failed logins per email address.
 *
 * All counters live behind `Counters`, backed by the app's KeyValueStore (`incr`), so
 * they are shared by every instance once the store is Redis. When the shared store
 * fails, counting falls back to this instance's memory (SPEC section 1: "rate limits
 * fall back to per-instance counting") and returns to the shared store by itself.
 * Windows are fixed: the key carries the window's index, so a counter needs no reset.
 */

export interface WindowCount {
  count: number;
  /** Milliseconds until the current window ends. */
  resetInMs: number;
}

export interface Counters {
  /** Counts one hit in the current window of `windowMs` and returns the new count. */
  hit(key: string, windowMs: number): Promise<WindowCount>;
  /** Forgets the current window's hits. */
  reset(key: string, windowMs: number): Promise<void>;
  /** `hit` without a promise when the counters live in this process; undefined otherwise. */
  hitNow?(key: string, windowMs: number): WindowCount | undefined;
}

export class KvCounters implements Counters {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly fallback: KeyValueStore = new MemoryStore(10_000),
    private readonly onError: (err: unknown) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  async hit(key: string, windowMs: number): Promise<WindowCount> {
    const { windowKey, resetInMs } = this.window(key, windowMs);
    let count: number;
    try {
      count = await this.kv.incr(windowKey, windowMs);
    } catch (err) {
      this.onError(err);
      count = await this.fallback.incr(windowKey, windowMs);
    }
    return { count, resetInMs };
  }

  hitNow(key: string, windowMs: number): WindowCount | undefined {
    if (!this.kv.incrNow) return undefined;
    const { windowKey, resetInMs } = this.window(key, windowMs);
    return { count: this.kv.incrNow(windowKey, windowMs), resetInMs };
  }

  async reset(key: string, windowMs: number): Promise<void> {
    const { windowKey } = this.window(key, windowMs);
    await Promise.allSettled([this.kv.delete(windowKey), this.fallback.delete(windowKey)]);
  }

  private window(key: string, windowMs: number) {
    const now = this.now();
    const index = Math.floor(now / windowMs);
    return { windowKey: `rl:${key}:${index}`, resetInMs: (index + 1) * windowMs - now };
  }
}

/** @fastify/rate-limit's store contract, on top of Counters. */
export function rateLimitStore(counters: Counters) {
  return class CountersStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      counters.hit(key, timeWindow).then(
        (r) => callback(null, { current: r.count, ttl: r.resetInMs }),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
      );
    }

    child(): CountersStore {
      return this;
    }
  };
}

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

/**
 * One counted group (`graphql`, `auth`). `clientKey` names the client: the signed-in
 * user's id, else the IP address (an IPv6 client by its /64, as one host owns those).
 */
export function createLimiter(
  app: FastifyInstance,
  options: { group: string; max: number; windowMs: number; clientKey: (request: FastifyRequest) => Promise<string> },
): (request: FastifyRequest, reply: FastifyReply) => Promise<LimitDecision> {
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

// Requests already counted before Fastify saw them (the front door), with the decision.
const decided = new WeakMap<IncomingMessage, LimitDecision>();

/** Hands the route a request that was counted already, so it is not counted twice. */
export function rememberDecision(raw: IncomingMessage, decision: LimitDecision): void {
  decided.set(raw, decision);
}

/** The decision made for this request before it reached the route, if any (taken once). */
export function takeDecision(raw: IncomingMessage): LimitDecision | undefined {
  const decision = decided.get(raw);
  if (decision) decided.delete(raw);
  return decision;
}

/** The decision on a count of hits in a window (the front door counts without the plugin). */
export function windowDecision(max: number, hit: WindowCount): LimitDecision {
  return {
    allowed: hit.count <= max,
    limit: max,
    remaining: Math.max(0, max - hit.count),
    retryAfterSeconds: Math.max(1, Math.ceil(hit.resetInMs / 1000)),
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

/** The client a limit counts for: the signed-in user, else the IP address (SPEC 6). */
export function clientKey(caller: Caller, ip: string): string {
  return caller.kind === 'user' ? `user:${caller.id}` : `ip:${normalizeIp(ip)}`;
}

// IPv6 normalisation (to the /64) runs a long regex and an address parser: remembered per address.
const normalizedIPv6 = new LRUCache<string, string>({ max: 10_000 });

function normalizeIp(ip: string): string {
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

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60 * 1000;

/**
 * Failed logins per email address: at most LOGIN_FAILURE_LIMIT attempts that did not
 * succeed per LOGIN_FAILURE_WINDOW_MS, whatever the client's address, so a password
 * guesser spread over many addresses is slowed as much as one. Every attempt counts
 * before the password is checked (so concurrent guesses cannot slip past a check) and
 * a success clears the count. Unknown addresses are counted like known ones (nothing
 * is revealed), and the store sees an HMAC of the address, never the address.
 */
export class LoginThrottle {
  constructor(
    private readonly counters: Counters,
    private readonly key: Buffer,
    private readonly limit = LOGIN_FAILURE_LIMIT,
    private readonly windowMs = LOGIN_FAILURE_WINDOW_MS,
  ) {}

  /** Counts an attempt; `allowed: false` with the seconds to wait when over the limit. */
  async attempt(email: string): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    const { count, resetInMs } = await this.counters.hit(this.keyOf(email), this.windowMs);
    return { allowed: count <= this.limit, retryAfterSeconds: Math.max(1, Math.ceil(resetInMs / 1000)) };
  }

  async succeeded(email: string): Promise<void> {
    await this.counters.reset(this.keyOf(email), this.windowMs);
  }

  private keyOf(email: string): string {
    return `login:${createHmac('sha256', this.key).update(email, 'utf8').digest('base64url')}`;
  }
}
