import type { Redis } from 'ioredis';
import { pino } from 'pino';
import type { Config } from './config.js';
import { connectDatabase, type Db } from './db/connect.js';
import { MemoryPubSub } from './realtime/memory.js';
import type { PubSub } from './realtime/pubsub.js';
import { RedisPubSub } from './realtime/redis.js';
import type { KeyValueStore } from './store/kv.js';
import { MemoryStore } from './store/memory.js';
import { closeRedis, connectRedis, waitReady } from './store/redis-client.js';
import { RedisStore } from './store/redis.js';
import { CacheStore, FallbackStore } from './store/resilient.js';
import { EVERYTHING, LocalVersions, SharedVersions, type VersionStore } from './cache/versions.js';

/**
 * The one place that picks implementations from configuration. Everything else sees
 * only the interfaces, so the core never branches on which backend it has.
 *
 * Without REDIS_URL everything shared lives in this process. With it, caches, counters,
 * persisted queries and pub/sub go through Redis, and each degrades on its own while
 * Redis is down (src/store/resilient.ts, README, "When Redis is down").
 */
export interface Backends {
  db: Db;
  /** Caches (the post cache). With Redis: calls reject while it is down, so callers bypass the cache. */
  kv: KeyValueStore;
  /** Rate-limit counters and persisted queries. With Redis: per-instance memory while it is down. */
  counters: KeyValueStore;
  /**
   * Persisted query documents: in memory, PERSISTED_QUERIES_MB at most (least recently
   * used dropped); with Redis, in Redis with their TTL, and in that memory while it is down.
   */
  persisted: KeyValueStore;
  pubsub: PubSub;
  /** The Redis command client, where security counters keep keys of their own (src/rate-limit); undefined without Redis. */
  redis: Redis | undefined;
  /**
   * Versions of what cached results depend on (src/cache/reads.ts): bumped by src/domain
   * after its writes, by everything else's writes to cached tables, and by commits of
   * other processes on a SQLite file. In memory, or shared by every instance through Redis.
   */
  versions: VersionStore;
  /** Redis's state for /readyz; undefined when Redis is not configured. */
  redisStatus: (() => Promise<'up' | 'down'>) | undefined;
  /** Waits (at most a few seconds) for Redis to connect; start-up goes on degraded without it. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** How long start-up waits for Redis before serving degraded. */
const REDIS_STARTUP_WAIT_MS = 5_000;

export function createBackends(config: Config): Backends {
  const db = connectDatabase(config.database);
  if (!config.redisUrl) {
    const kv = new MemoryStore();
    const persisted = persistedMemory(config);
    const pubsub = new MemoryPubSub();
    const versions = new LocalVersions(db.externalChanges);
    db.onUnannouncedWrite(() => versions.bump([EVERYTHING]));
    return {
      db,
      kv,
      counters: kv,
      persisted,
      pubsub,
      redis: undefined,
      versions,
      redisStatus: undefined,
      ready: async () => {},
      async close() {
        await pubsub.close();
        await kv.close();
        await persisted.close();
        await db.close();
      },
    };
  }
  return createRedisBackends(config, config.redisUrl, db);
}

function createRedisBackends(config: Config, url: string, db: Db): Backends {
  const log = pino({ level: config.logLevel, name: 'redis' });
  const events = {
    onDown: (name: string, error: Error | undefined) =>
      log.warn({ connection: name, err: error?.message }, 'Redis connection lost: caches bypassed, counters per instance, remote events dropped'),
    onUp: (name: string) => log.info({ connection: name }, 'Redis connection restored'),
  };
  // Commands and PUBLISH share one connection; SUBSCRIBE needs its own.
  const options = { commandTimeoutMs: config.redisCommandTimeoutMs };
  const client = connectRedis(url, 'commands', events, options);
  const subscriber = connectRedis(url, 'subscriber', events, options);
  const connections: Redis[] = [client, subscriber];

  // Rate-limited: during an outage every cache call would otherwise log.
  let lastLogged = 0;
  const onError = (error: unknown) => {
    const now = Date.now();
    if (now - lastLogged < 10_000) return;
    lastLogged = now;
    log.warn({ err: error instanceof Error ? error.message : String(error) }, 'Redis call failed; degrading');
  };

  const prefix = config.redisKeyPrefix;
  const kv = new CacheStore(new RedisStore(client, `${prefix}cache:`), { onError });
  const counters = new FallbackStore(new RedisStore(client, `${prefix}kv:`), new MemoryStore(), onError);
  // Under the same keys as before, so documents registered by an older version stay found.
  const persisted = new FallbackStore(new RedisStore(client, `${prefix}kv:`), persistedMemory(config), onError);
  const pubsub = new RedisPubSub(client, subscriber, { channelPrefix: prefix, onError });
  // In the cache store: a bump Redis missed is replayed, and its tag bypassed until then.
  const versions = new SharedVersions(kv, onError, db.externalChanges);
  db.onUnannouncedWrite(() => versions.bump([EVERYTHING]));

  return {
    db,
    kv,
    counters,
    persisted,
    pubsub,
    redis: client,
    versions,
    async redisStatus() {
      if (connections.some((c) => c.status !== 'ready')) return 'down';
      try {
        await client.ping();
        return 'up';
      } catch {
        return 'down';
      }
    },
    async ready() {
      const connected = await waitReady(connections, REDIS_STARTUP_WAIT_MS);
      if (!connected) log.warn({ timeoutMs: REDIS_STARTUP_WAIT_MS }, 'Redis not reachable at start-up; starting degraded');
    },
    async close() {
      await pubsub.close();
      await kv.close();
      await counters.close();
      await persisted.close();
      await Promise.all(connections.map(closeRedis));
      await db.close();
    },
  };
}

/** Persisted documents in this process: their own budget, so no other traffic evicts them and they crowd out nothing. */
function persistedMemory(config: Config): MemoryStore {
  return new MemoryStore({ maxBytes: config.persistedQueriesBytes });
}
