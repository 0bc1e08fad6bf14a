import { LRUCache } from 'lru-cache';
import type { KeyValueStore } from './kv.js';

/** The in-process store: bounded, so a flood of distinct keys cannot exhaust memory. */
export class MemoryStore implements KeyValueStore {
  private readonly entries: LRUCache<string, string>;

  constructor(maxEntries = 50_000) {
    this.entries = new LRUCache<string, string>({ max: maxEntries, ttlAutopurge: false });
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
