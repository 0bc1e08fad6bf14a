import type { KeyValueStore } from './kv.js';
import { MemoryStore } from './memory.js';

/**
 * How the service degrades while Redis is down (docs/operations.md). Two wrappers over
 * the shared store, one per kind of data:
 *
 * - `FallbackStore`, for rate-limit counters and persisted queries: while the shared
 *   store fails, the same calls go to an in-process `MemoryStore`. Rate limits thus
 *   fall back to per-instance counting (neither open nor closed, see
 *   README, "When Redis is down"), and persisted queries to per-instance registration (a client
 *   that meets an instance without its hash gets PERSISTED_QUERY_NOT_FOUND and resends
 *   the text, as the protocol intends).
 *
 * - `CacheStore`, for caches: calls reject while the shared store fails, so the cache
 *   is bypassed (the database answers). Falling back to a local copy would be wrong
 *   here: another instance's invalidation could not reach it. A write that failed (an
 *   invalidation during the outage) is remembered and replayed once Redis is back, and
 *   reads of that key keep bypassing until it has been: otherwise an entry cached
 *   before the outage would be served after it, stale.
 */

/** A shared store that can tell whether its connection is up right now. */
export interface SharedStore extends KeyValueStore {
  readonly available: boolean;
  onReady(listener: () => void): void;
  /** Deletes every key of this store. */
  clear(): Promise<void>;
}

export class FallbackStore implements KeyValueStore {
  constructor(
    private readonly shared: SharedStore,
    readonly local: KeyValueStore = new MemoryStore(),
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  get(key: string) {
    return this.use((s) => s.get(key));
  }
  getMany(keys: readonly string[]) {
    return this.use((s) => s.getMany(keys));
  }
  set(key: string, value: string, ttlMs: number) {
    return this.use((s) => s.set(key, value, ttlMs));
  }
  setIfAbsent(key: string, value: string, ttlMs: number) {
    return this.use((s) => s.setIfAbsent(key, value, ttlMs));
  }
  delete(key: string) {
    return this.use((s) => s.delete(key));
  }
  incr(key: string, ttlMs: number) {
    return this.use((s) => s.incr(key, ttlMs));
  }
  async close(): Promise<void> {
    await this.local.close();
  }

  private async use<T>(call: (store: KeyValueStore) => Promise<T>): Promise<T> {
    if (!this.shared.available) return call(this.local);
    try {
      return await call(this.shared);
    } catch (error) {
      this.onError(error);
      return call(this.local);
    }
  }
}

/** A write the shared store missed: a value to set (until `expiresAt`) or a delete. */
interface MissedWrite {
  value: string | undefined;
  expiresAt: number;
}

export interface CacheStoreOptions {
  /** Missed writes remembered before giving up and clearing the whole cache on recovery. */
  maxMissed?: number;
  /** How often to retry replaying while writes are missed. */
  retryMs?: number;
  onError?: (error: unknown) => void;
}

export class CacheStore implements KeyValueStore {
  private readonly missed = new Map<string, MissedWrite>();
  private overflowed = false;
  private replaying: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly maxMissed: number;
  private readonly retryMs: number;
  private readonly onError: (error: unknown) => void;

  constructor(
    private readonly shared: SharedStore,
    options: CacheStoreOptions = {},
  ) {
    this.maxMissed = options.maxMissed ?? 10_000;
    this.retryMs = options.retryMs ?? 1_000;
    this.onError = options.onError ?? (() => {});
    shared.onReady(() => void this.replay());
  }

  /** Writes not yet replayed (tests and health). */
  get missedWrites(): number {
    return this.overflowed ? Infinity : this.missed.size;
  }

  async get(key: string): Promise<string | undefined> {
    this.assertCurrent([key]);
    return this.shared.get(key);
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    this.assertCurrent(keys);
    return this.shared.getMany(keys);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    try {
      await this.shared.set(key, value, ttlMs);
      this.missed.delete(key);
    } catch (error) {
      this.remember(key, { value, expiresAt: Date.now() + ttlMs });
      throw error;
    }
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    this.assertCurrent([key]);
    return this.shared.setIfAbsent(key, value, ttlMs);
  }

  async delete(key: string): Promise<void> {
    try {
      await this.shared.delete(key);
      this.missed.delete(key);
    } catch (error) {
      this.remember(key, { value: undefined, expiresAt: 0 });
      throw error;
    }
  }

  incr(key: string, ttlMs: number): Promise<number> {
    return this.shared.incr(key, ttlMs);
  }

  async close(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
  }

  /** Replays the missed writes (or clears the cache after too many); resolves when done or failed. */
  replay(): Promise<void> {
    if (!this.overflowed && this.missed.size === 0) return Promise.resolve();
    this.replaying ??= this.replayOnce().finally(() => {
      this.replaying = undefined;
      if (this.overflowed || this.missed.size > 0) this.scheduleRetry();
    });
    return this.replaying;
  }

  private async replayOnce(): Promise<void> {
    if (!this.shared.available) return;
    try {
      if (this.overflowed) {
        await this.shared.clear();
        this.overflowed = false;
        this.missed.clear();
        return;
      }
      for (const [key, write] of [...this.missed]) {
        const left = write.expiresAt - Date.now();
        if (write.value !== undefined && left > 0) await this.shared.set(key, write.value, left);
        else await this.shared.delete(key);
        // A newer write that failed meanwhile stays to be replayed.
        if (this.missed.get(key) === write) this.missed.delete(key);
      }
    } catch (error) {
      this.onError(error);
    }
  }

  private remember(key: string, write: MissedWrite): void {
    this.missed.delete(key);
    if (this.missed.size >= this.maxMissed) {
      this.overflowed = true;
      this.missed.clear();
    } else if (!this.overflowed) {
      this.missed.set(key, write);
    }
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.replay();
    }, this.retryMs);
    this.retryTimer.unref();
  }

  /** Reads of a key whose last write was missed bypass the cache until it is replayed. */
  private assertCurrent(keys: readonly string[]): void {
    if (this.overflowed || (this.missed.size > 0 && keys.some((k) => this.missed.has(k)))) {
      throw new CacheNotCurrentError();
    }
  }
}

export class CacheNotCurrentError extends Error {
  constructor() {
    super('cache entry awaits a replayed write; bypassing the cache');
    this.name = 'CacheNotCurrentError';
  }
}
