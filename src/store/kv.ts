/**
 * A small key-value store for caches and persisted queries: in memory for one
 * instance, Redis when several instances must share it. Values are strings so both
 * implementations behave the same; callers serialise.
 */
export interface KeyValueStore {
  get(key: string): Promise<string | undefined>;
  /** Several keys in one round trip; missing keys are undefined. */
  getMany(keys: readonly string[]): Promise<(string | undefined)[]>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
  /** Sets the key only when it does not exist (Redis `SET NX`); true when it was set. */
  setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean>;
  delete(key: string): Promise<void>;
  /** Atomically adds one and returns the new value; the key expires ttlMs after the last increment. */
  incr(key: string, ttlMs: number): Promise<number>;
  /** `incr` without a promise, offered by stores in this process (the hot path counts with it). */
  incrNow?(key: string, ttlMs: number): number;
  close(): Promise<void>;
}
