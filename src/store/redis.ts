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
  ) {
    defineIncrementScript(client);
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

  /**
   * INCR and PEXPIRE in one small Lua script: atomic, one round trip, and one command on
   * the wire (a MULTI would be four writes, which cost a quarter of a request's CPU on
   * the rate-limited hot path). The TTL restarts with each increment.
   */
  async incr(key: string, ttlMs: number): Promise<number> {
    return Number(await (this.client as ScriptedRedis).inkwellIncr(this.keyPrefix + key, ttl(ttlMs)));
  }

  /** The connection is owned by the backends, which close it. */
  async close(): Promise<void> {}
}

const INCR_WITH_TTL = `local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`;

type ScriptedRedis = Redis & { inkwellIncr(key: string, ttlMs: number): Promise<number> };

/**
 * Defines the script as a command (EVALSHA; ioredis loads it on first use and after a
 * Redis restart). It must be defined before the connection's first command: an
 * auto-pipeline copies the commands defined when it opens, and calling one it lacks
 * throws an uncaught TypeError inside ioredis (docs/decisions.md, 2026-11-25).
 */
function defineIncrementScript(client: Redis): void {
  if (!('inkwellIncr' in client)) client.defineCommand('inkwellIncr', { numberOfKeys: 1, lua: INCR_WITH_TTL });
}

const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/** Redis refuses PX 0 and fractions. */
const ttl = (ms: number) => Math.max(1, Math.ceil(ms));
