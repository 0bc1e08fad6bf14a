/**
 * A sliding window of attempts per key (the sign-in throttle, docs/limits.md "Failed
 * logins"): at most `limit` attempts counted within any `windowMs`, with no fresh
 * allowance at a clock boundary, and the exact wait until the oldest counted attempt
 * leaves the window. A refused attempt is not counted, so the wait it is told is the
 * real one. rate-limiter-flexible counts fixed windows from a key's first hit (19
 * attempts within seconds across its end), so this is the one hand-written counter:
 * this in-memory one, and ./redis-sliding-window.ts for instances that share Redis.
 */

export interface WindowAnswer {
  allowed: boolean;
  /** When refused: milliseconds until an attempt is allowed again; 0 when allowed. */
  retryAfterMs: number;
}

export interface SlidingWindow {
  /** Counts an attempt for `key` if fewer than the limit were counted in the window; atomic. */
  take(key: string): Promise<WindowAnswer>;
  /** Forgets the key's attempts. */
  clear(key: string): Promise<void>;
}

export interface WindowOptions {
  limit: number;
  windowMs: number;
  now?: () => number;
}

/**
 * In this process: per key at most `limit` times, oldest first. Never evicted by other
 * traffic; a key whose attempts have all left the window is dropped by a sweep at most
 * once per window, so memory follows the keys of the last window only.
 */
export class MemorySlidingWindow implements SlidingWindow {
  private readonly attempts = new Map<string, number[]>();
  private readonly limit: number;
  private readonly windowMs: number;
  private readonly now: () => number;
  private lastSweep: number;

  constructor(options: WindowOptions) {
    this.limit = options.limit;
    this.windowMs = options.windowMs;
    this.now = options.now ?? Date.now;
    this.lastSweep = this.now();
  }

  async take(key: string): Promise<WindowAnswer> {
    return this.takeNow(key);
  }

  /** Synchronous, so concurrent attempts cannot interleave between the count and the record. */
  takeNow(key: string): WindowAnswer {
    const now = this.now();
    this.sweep(now);
    // An attempt at time t counts within (t - windowMs, t].
    const since = now - this.windowMs;
    const times = (this.attempts.get(key) ?? []).filter((t) => t > since);
    if (times.length < this.limit) {
      times.push(now);
      this.attempts.set(key, times);
      return { allowed: true, retryAfterMs: 0 };
    }
    this.attempts.set(key, times);
    return { allowed: false, retryAfterMs: times[0]! + this.windowMs - now };
  }

  async clear(key: string): Promise<void> {
    this.attempts.delete(key);
  }

  /** How many keys are held (for tests of the sweep). */
  get size(): number {
    return this.attempts.size;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < this.windowMs) return;
    this.lastSweep = now;
    const since = now - this.windowMs;
    for (const [key, times] of this.attempts) {
      if (times[times.length - 1]! <= since) this.attempts.delete(key);
    }
  }
}
