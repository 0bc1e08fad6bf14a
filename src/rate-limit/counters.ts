import type { KeyValueStore } from '../store/kv.js';
import { MemoryStore } from '../store/memory.js';

/**
 * Fixed-window hit counters behind every rate limit (docs/limits.md), on the app's
 * key-value store, so every instance shares them once the store is Redis. When the
 * shared store fails, counting falls back to this instance's memory and returns to the
 * shared store by itself. The key carries the window's index: no counter needs a reset.
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
