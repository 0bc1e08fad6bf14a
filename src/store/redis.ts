import type { Redis } from 'ioredis';
import type { KeyValueStore } from './kv.js';

/**
 * The shared key-value store on Redis. Every key gets `keyPrefix`, so deployments (and
 * test files) can share one Redis without seeing each other's keys. Calls fail fast
 * while Redis is down (see `connectRedis`); callers decide how to degrade.
 */
export class RedisStore implements KeyValueStore {
  constructor(
    private readonly client: Redis,
    private readonly keyPrefix = '',
  ) {}

  /** True while the connection can take commands (false means calls would reject at once). */
  get available(): boolean {
    return this.client.status === 'ready';
  }

  /** Calls `listener` each time the connection becomes ready (start-up and every reconnect). */
  onReady(listener: () => void): void {
    this.client.on('ready', listener);
  }

  /** Deletes every key under this store's prefix (SCAN + UNLINK, in batches). */
  async clear(): Promise<void> {
    let cursor = '0';
    do {
      const [next, keys] = await this.client.scan(cursor, 'MATCH', `${escapeGlob(this.keyPrefix)}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await this.client.unlink(...keys);
    } while (cursor !== '0');
  }

  async get(key: string): Promise<string | undefined> {
    return (await this.client.get(this.keyPrefix + key)) ?? undefined;
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    if (keys.length === 0) return [];
    const values = await this.client.mget(keys.map((k) => this.keyPrefix + k));
    return values.map((v) => v ?? undefined);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.client.set(this.keyPrefix + key, value, 'PX', ttl(ttlMs));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.client.set(this.keyPrefix + key, value, 'PX', ttl(ttlMs), 'NX')) === 'OK';
  }

  async delete(key: string): Promise<void> {
    await this.client.del(this.keyPrefix + key);
  }

  /** INCR and PEXPIRE in one MULTI: atomic, one round trip; the TTL restarts with each increment. */
  async incr(key: string, ttlMs: number): Promise<number> {
    const k = this.keyPrefix + key;
    const results = await this.client.multi().incr(k).pexpire(k, ttl(ttlMs)).exec();
    if (!results) throw new Error('Redis transaction aborted');
    const [incrError, value] = results[0] ?? [new Error('Redis transaction returned nothing'), undefined];
    if (incrError) throw incrError;
    return Number(value);
  }

  /** The connection is owned by the backends, which close it. */
  async close(): Promise<void> {}
}

const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/** Redis refuses PX 0 and fractions. */
const ttl = (ms: number) => Math.max(1, Math.ceil(ms));
