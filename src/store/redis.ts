import type { Redis } from 'ioredis';
import type { KeyValueStore } from './kv.js';
import { TurnPipeline } from './redis-turn.js';

/**
 * The shared key-value store on Redis. Every key gets `keyPrefix`, so deployments (and
 * test files) can share one Redis without seeing each other's keys. Calls fail fast
 * while Redis is down (see `connectRedis`); callers decide how to degrade. Each turn's
 * calls go to Redis together (./redis-turn.ts).
 */
export class RedisStore implements KeyValueStore {
  private readonly turn: TurnPipeline;

  constructor(
    private readonly client: Redis,
    private readonly keyPrefix = '',
  ) {
    this.turn = TurnPipeline.of(client);
  }

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
    const [value] = await this.turn.mget([this.keyPrefix + key]);
    return value ?? undefined;
  }

  async getMany(keys: readonly string[]): Promise<(string | undefined)[]> {
    if (keys.length === 0) return [];
    const values = await this.turn.mget(keys.map((k) => this.keyPrefix + k));
    return values.map((v) => v ?? undefined);
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    await this.turn.command((client) => client.set(this.keyPrefix + key, value, 'PX', ttl(ttlMs)));
  }

  async setIfAbsent(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.turn.command((client) => client.set(this.keyPrefix + key, value, 'PX', ttl(ttlMs), 'NX'))) === 'OK';
  }

  async delete(key: string): Promise<void> {
    await this.turn.command((client) => client.del(this.keyPrefix + key));
  }

  /** Atomic; one increment per key per turn on the wire (./redis-turn.ts). */
  incr(key: string, ttlMs: number): Promise<number> {
    return this.turn.incr(this.keyPrefix + key, ttl(ttlMs));
  }

  /** The connection is owned by the backends, which close it. */
  async close(): Promise<void> {}
}

const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/** Redis refuses PX 0 and fractions. */
const ttl = (ms: number) => Math.max(1, Math.ceil(ms));
