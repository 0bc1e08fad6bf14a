import type { ChainableCommander, Redis } from 'ioredis';
import type { KeyValueStore } from './kv.js';

/**
 * The shared key-value store on Redis. Every key gets `keyPrefix`, so deployments (and
 * test files) can share one Redis without seeing each other's keys. Calls fail fast
 * while Redis is down (see `connectRedis`); callers decide how to degrade.
 */
export class RedisStore implements KeyValueStore {
  /** This turn's increments per key, not sent yet (`incr`). */
  private increments = new Map<string, { ttlMs: number; callers: { resolve(count: number): void; reject(error: unknown): void }[] }>();

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
   * INCRBY and PEXPIRE in one small Lua script: atomic, one command on the wire. The
   * increments of one event-loop turn are merged per key (the rate limit counts every
   * request): one `INCRBY n` for n callers, each of whom gets its own count, `total - n +
   * 1` to `total`, as n INCRs in a row would have given. They go out at the turn's check
   * phase in one pipeline of their own. The TTL restarts with each increment.
   */
  incr(key: string, ttlMs: number): Promise<number> {
    return new Promise((resolve, reject) => {
      if (this.increments.size === 0) setImmediate(() => this.sendIncrements());
      const fullKey = this.keyPrefix + key;
      const pending = this.increments.get(fullKey);
      if (pending) {
        pending.ttlMs = ttl(ttlMs);
        pending.callers.push({ resolve, reject });
      } else {
        this.increments.set(fullKey, { ttlMs: ttl(ttlMs), callers: [{ resolve, reject }] });
      }
    });
  }

  private sendIncrements(): void {
    const increments = [...this.increments];
    this.increments = new Map();
    const pipeline = this.client.pipeline() as ScriptedPipeline;
    for (const [key, { ttlMs, callers }] of increments) pipeline.inkwellIncrBy(key, ttlMs, callers.length);
    pipeline.exec().then(
      (results) =>
        increments.forEach(([, { callers }], i) => {
          const [error, total] = results?.[i] ?? [new Error('Redis answered no result')];
          if (error) callers.forEach((caller) => caller.reject(error));
          else callers.forEach((caller, k) => caller.resolve(Number(total) - callers.length + 1 + k));
        }),
      (error: unknown) => increments.forEach(([, { callers }]) => callers.forEach((caller) => caller.reject(error))),
    );
  }

  /** The connection is owned by the backends, which close it. */
  async close(): Promise<void> {}
}

const INCR_WITH_TTL = `local n = redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`;

type ScriptedPipeline = ChainableCommander & { inkwellIncrBy(key: string, ttlMs: number, by: number): ChainableCommander };

/**
 * Defines the script as a command (EVALSHA; ioredis loads it on first use and after a
 * Redis restart). It must be defined before the connection's first command: an
 * auto-pipeline copies the commands defined when it opens, and calling one it lacks
 * throws an uncaught TypeError inside ioredis (docs/decisions.md, 2026-11-25).
 */
function defineIncrementScript(client: Redis): void {
  if (!('inkwellIncrBy' in client)) client.defineCommand('inkwellIncrBy', { numberOfKeys: 1, lua: INCR_WITH_TTL });
}

const escapeGlob = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/** Redis refuses PX 0 and fractions. */
const ttl = (ms: number) => Math.max(1, Math.ceil(ms));
