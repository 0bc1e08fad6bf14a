import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { TurnPipeline, type Merge } from '../store/redis-turn.js';

/**
 * Each caller's bucket of query cost (docs/limits.md, "Cost"): `limit` points, refilled
 * at `restorePerSecond` points a second. An operation takes its requested cost if the
 * bucket holds it; what it did not use is given back afterwards, never past the limit.
 * With Redis the bucket is shared by every instance: one Lua script refills by the time
 * elapsed on Redis's own clock and takes or gives atomically (docs/decisions.md, "Cost
 * buckets"). Without Redis, or while a call to it fails, this instance counts alone.
 * A full bucket is no entry at all: a key expires (or is dropped) once it would be full,
 * so only callers who spent points within the last `limit / restorePerSecond` seconds
 * hold memory.
 */

export interface CostBucketOptions {
  limit: number;
  restorePerSecond: number;
}

/** Where buckets are shared: the Redis command client and this store's key prefix. */
export interface SharedBuckets {
  client: Redis;
  keyPrefix: string;
}

export interface BucketAnswer {
  /** The bucket held the points asked for (and the points kept were taken). */
  readonly allowed: boolean;
  /** Whole points in the bucket after the call (rounded down). */
  readonly available: number;
  /** When refused: seconds until the bucket holds the points asked for, rounded up; else 0. */
  readonly retryAfterSeconds: number;
  /** Counted in Redis (true) or in this instance: a refund goes back where the points were taken. */
  readonly shared: boolean;
}

/**
 * Most buckets kept in this process at once (~200 bytes each). Only a caller with no
 * request for a while can be dropped, and its bucket is then refilling anyway.
 */
const MAX_LOCAL_BUCKETS = 100_000;

// KEYS[1]: the bucket, a hash {p: points, t: Redis time in ms}; absent = full.
// ARGV: limit, restore per second, then (need, keep) per call, applied in order.
// Returns {allowed (1/0), points after} per call, flattened.
const BUCKET_SCRIPT = `local limit = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local points = limit
local saved = redis.call('HMGET', KEYS[1], 'p', 't')
if saved[1] then
  points = math.min(limit, tonumber(saved[1]) + math.max(0, now - tonumber(saved[2])) * rate / 1000)
end
local replies = {}
local taken = false
for i = 3, #ARGV, 2 do
  local need = tonumber(ARGV[i])
  local keep = tonumber(ARGV[i + 1])
  if need > points then
    table.insert(replies, 0)
  else
    points = math.min(limit, points - keep)
    taken = true
    table.insert(replies, 1)
  end
  table.insert(replies, tostring(points))
end
if not taken then return replies end
if points >= limit then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'p', tostring(points), 't', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil((limit - points) * 1000 / rate))
end
return replies`;

const COMMAND = 'inkwellCostBucket';

type Scripted = Redis & {
  [COMMAND](key: string, limit: number, rate: number, ...needKeep: number[]): Promise<unknown[]>;
};

interface Call {
  need: number;
  keep: number;
}

export class CostBucket {
  readonly limit: number;
  readonly restorePerSecond: number;
  private readonly local: LocalBuckets;
  private readonly turn: TurnPipeline | undefined;
  /** The calls of one key in one turn: one script call applying them in order (src/store/redis-turn.ts). */
  private readonly merge: Merge<Call, [allowed: boolean, points: number]> = {
    add: (client, key, calls) =>
      (client as Scripted)[COMMAND](key, this.limit, this.restorePerSecond, ...calls.flatMap((c) => [c.need, c.keep])),
    split: (reply, calls) => calls.map((_, k) => [(reply as unknown[])[2 * k] === 1, Number((reply as unknown[])[2 * k + 1])]),
  };

  constructor(
    options: CostBucketOptions,
    private readonly shared?: SharedBuckets,
    private readonly onError: (error: unknown) => void = () => {},
    now: () => number = () => performance.now(),
  ) {
    this.limit = options.limit;
    this.restorePerSecond = options.restorePerSecond;
    this.local = new LocalBuckets(options, now);
    if (shared) {
      // Defined with the client, before its first use (docs/decisions.md, "Lua scripts").
      if (!(COMMAND in shared.client)) shared.client.defineCommand(COMMAND, { numberOfKeys: 1, lua: BUCKET_SCRIPT });
      this.turn = TurnPipeline.of(shared.client);
    }
  }

  /**
   * Takes `keep` points from `key`'s bucket if it holds `need` (keep ≤ need: a cached
   * answer needs its requested cost and keeps what its execution cost); atomic.
   */
  take(key: string, need: number, keep = need): Promise<BucketAnswer> {
    return this.apply(key, need, keep, true);
  }

  /** Gives `points` back to `key`'s bucket (never past the limit), where they were taken. */
  async give(key: string, points: number, shared: boolean): Promise<BucketAnswer> {
    return this.apply(key, 0, -points, shared);
  }

  private async apply(key: string, need: number, keep: number, shared: boolean): Promise<BucketAnswer> {
    const { turn } = this;
    if (shared && turn && this.shared!.client.status === 'ready') {
      try {
        // Merged with the key's other calls of this event-loop turn (src/store/redis-turn.ts).
        const [allowed, points] = await turn.merged(this.merge, this.shared!.keyPrefix + key, { need, keep });
        return this.answer(allowed, points, need, true);
      } catch (error) {
        this.onError(error);
      }
    }
    const { allowed, points } = this.local.apply(key, need, keep);
    return this.answer(allowed, points, need, false);
  }

  private answer(allowed: boolean, points: number, need: number, shared: boolean): BucketAnswer {
    const retryAfterSeconds = allowed ? 0 : Math.max(1, Math.ceil((need - points) / this.restorePerSecond));
    return { allowed, available: Math.max(0, Math.floor(points)), retryAfterSeconds, shared };
  }
}

interface Saved {
  points: number;
  /** The local monotonic clock (ms) when `points` was counted. */
  at: number;
}

/** The same bucket in this process: synchronous, so concurrent requests cannot interleave. */
class LocalBuckets {
  // Bounded by count through `maxSize` (each bucket sizes 1): a `max` would allocate all
  // 100,000 slots up front, 13 ms and ~3 MB for every instance built.
  private readonly buckets = new LRUCache<string, Saved>({ maxSize: MAX_LOCAL_BUCKETS, sizeCalculation: () => 1 });
  private readonly limit: number;
  private readonly rate: number;

  constructor(
    options: CostBucketOptions,
    private readonly now: () => number,
  ) {
    this.limit = options.limit;
    this.rate = options.restorePerSecond;
  }

  apply(key: string, need: number, keep: number): { allowed: boolean; points: number } {
    const now = this.now();
    const saved = this.buckets.get(key);
    let points = saved ? Math.min(this.limit, saved.points + (Math.max(0, now - saved.at) * this.rate) / 1000) : this.limit;
    if (need > points) return { allowed: false, points };
    points = Math.min(this.limit, points - keep);
    if (points >= this.limit) this.buckets.delete(key);
    // Dropped once it would be full again: a missing bucket is a full one.
    else this.buckets.set(key, { points, at: now }, { ttl: Math.ceil(((this.limit - points) * 1000) / this.rate) });
    return { allowed: true, points };
  }

  /** Buckets held now (tests). */
  get size(): number {
    return this.buckets.size;
  }
}
