import type { Redis } from 'ioredis';
import { TurnPipeline, type Merge } from '../store/redis-turn.js';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/**
 * The request counts behind every rate limit (docs/limits.md, "Rate limits"):
 * RATE_LIMIT_MAX per RATE_LIMIT_WINDOW_MS per key, on rate-limiter-flexible in a store of
 * their own that nothing else writes and nothing evicts (docs/limits.md): this
 * process's memory, or Redis with a per-instance memory insurance while Redis is down.
 * A window starts at a key's first request. HTTP and WebSocket decide here, alike.
 */

export interface LimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window ends (the `Retry-After` once over). */
  retryAfterSeconds: number;
}

/** Where counts are shared: the Redis command client and the key prefix of this limiter. */
export interface SharedCounts {
  client: Redis;
  keyPrefix: string;
}

// The library's own script, in milliseconds: it cuts a window to whole seconds (1.5 s to 1 s).
const INCR_PX_SCRIPT = `local ms = math.floor(tonumber(ARGV[4]) * 1000)
redis.call('set', KEYS[1], 0, 'PX', ms, 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('pexpire', KEYS[1], ms)
  ttl = ms
end
return {consumed, ttl}`;

export class RequestLimit {
  private readonly limiter: RateLimiterAbstract;

  constructor(
    readonly max: number,
    readonly windowMs: number,
    shared?: SharedCounts,
  ) {
    // Redis expiries are whole milliseconds and the library's are at least a second.
    const duration = Math.max(1_000, windowMs) / 1000;
    const memory = new RateLimiterMemory({ points: max, duration, keyPrefix: 'rl' });
    this.limiter = shared
      ? new RateLimiterRedis({
          storeClient: inTurns(shared.client),
          keyPrefix: shared.keyPrefix,
          points: max,
          duration,
          customIncrTtlLuaScript: INCR_PX_SCRIPT,
          // With no offline queue a call fails at once anyway; this skips even trying.
          rejectIfRedisNotReady: true,
          insuranceLimiter: memory,
        })
      : memory;
  }

  /** Counts one request for `key`: allowed while the window's count is at most `max`. */
  async decide(key: string): Promise<LimitDecision> {
    let res: RateLimiterRes;
    let allowed = true;
    try {
      res = await this.limiter.consume(key);
    } catch (rejected) {
      if (!(rejected instanceof RateLimiterRes)) throw rejected;
      res = rejected;
      allowed = false;
    }
    return { allowed, limit: this.max, remaining: res.remainingPoints, retryAfterSeconds: Math.max(1, Math.ceil(res.msBeforeNext / 1000)) };
  }
}

/**
 * The Redis client as rate-limiter-flexible sees it, with its counting script sent in the
 * event-loop turn's pipeline (src/store/redis-turn.ts) and merged per key: the n requests
 * of one caller in a turn count as one `consume` of their points together, each told the
 * count it would have got alone. With a script call per request for counts and cost, the
 * PostgreSQL + Redis build took 1.44× the CPU per request of the same build counting both
 * in memory (docs/decisions.md, "Request counts and cost buckets"). Everything else is
 * the client itself.
 */
function inTurns(client: Redis): Redis {
  const turn = TurnPipeline.of(client);
  return new Proxy(client, {
    get(target, name, receiver) {
      if (name !== 'rlflxIncr') return Reflect.get(target, name, receiver);
      return (args: IncrArgs) => turn.merged(COUNT, args[0], args);
    },
  });
}

/** The script's arguments: key, points, then the window's settings (the same for every call of one limiter). */
type IncrArgs = [key: string, points: string, ...settings: string[]];

/** n counts of a key in a turn: one call for their points together; the script answers [count, ttl]. */
const COUNT: Merge<IncrArgs, [number, number]> = {
  add(client, key, calls) {
    const points = calls.reduce((sum, [, p]) => sum + Number(p), 0);
    return (client as unknown as Scripted).rlflxIncr([key, String(points), ...calls[0]!.slice(2)]);
  },
  split(reply, calls) {
    const [total, ttl] = reply as [number, number];
    let after = calls.reduce((sum, [, p]) => sum + Number(p), 0);
    return calls.map(([, p]) => {
      const count = Number(total) - after + Number(p);
      after -= Number(p);
      return [count, ttl];
    });
  },
};

/** The library's script, as ioredis defines it on the client. */
interface Scripted {
  rlflxIncr(args: (string | number)[]): Promise<unknown>;
}
