import { LRUCache } from 'lru-cache';
import type { KeyValueStore } from './kv.js';

/** The in-process caches' default budget (docs/limits.md, "Memory"). */
export const DEFAULT_MEMORY_STORE_BYTES = 32 * 1024 * 1024;

/**
 * What one entry holds: key and value at two bytes a character (V8 keeps a string with
 * any non-Latin-1 character in two bytes each; counting them all so keeps the bound a
 * bound), plus the cache's own node, map slot and TTL bookkeeping.
 */
export function entryBytes(key: string, value: string): number {
  return (key.length + value.length) * 2 + 128;
}

export interface MemoryStoreOptions {
  /** Bytes of keys and values at most; the least recently used go first. */
  maxBytes?: number;
  /** A value whose entry alone is larger is not kept (a set is a no-op, a get then misses). */
  maxEntryBytes?: number;
}

/**
 * The in-process store: bounded in bytes, not entries, so a flood of large or distinct
 * values cannot exhaust memory (docs/limits.md, "Memory").
 */
export class MemoryStore implements KeyValueStore {
  private readonly entries: LRUCache<string, string>;

  constructor(options: MemoryStoreOptions = {}) {
    const maxBytes = options.maxBytes ?? DEFAULT_MEMORY_STORE_BYTES;
    this.entries = new LRUCache<string, string>({
      maxSize: maxBytes,
      maxEntrySize: Math.min(options.maxEntryBytes ?? maxBytes, maxBytes),
      sizeCalculation: (value, key) => entryBytes(key, value),
      ttlAutopurge: false,
    });
  }

  /** Bytes held now, as counted against the bound (tests, diagnostics). */
  get bytes(): number {
    return this.entries.calculatedSize;
  }

  async get(key: string): Promise<string | undefined> {
    return this.entries.get(key);
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    return keys.map((k) => this.entries.get(k));
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    this.entries.set(key, value, { ttl: ttlMs });
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    if (this.entries.has(key)) return false;
    this.entries.set(key, value, { ttl: ttlMs });
    return true;
  }

  async delete(key: string): Promise<void> {
    this.entries.delete(key);
  }

  async incr(key: string, ttlMs: number): Promise<number> {
    return this.incrNow(key, ttlMs);
  }

  incrNow(key: string, ttlMs: number): number {
    const next = Number(this.entries.get(key) ?? '0') + 1;
    this.entries.set(key, String(next), { ttl: ttlMs });
    return next;
  }

  async close(): Promise<void> {
    this.entries.clear();
  }
}
