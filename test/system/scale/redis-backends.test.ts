import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { RedisPubSub } from '../../../src/realtime/redis.js';
import { MemoryStore } from '../../../src/store/memory.js';
import { closeRedis, connectRedis, waitReady } from '../../../src/store/redis-client.js';
import { RedisStore } from '../../../src/store/redis.js';
import { CacheNotCurrentError, CacheStore, FallbackStore } from '../../../src/store/resilient.js';
import { freePort } from '../../helpers/postgres.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { eventually } from './instances.js';

/**
 * The Redis implementations of KeyValueStore and PubSub against a real redis-server:
 * the same contract as the memory ones (src/store/kv.ts, src/realtime/pubsub.ts), plus
 * what only Redis has: key prefixes, several instances, and losing the connection.
 */
const connections: Redis[] = [];
const connect = async (url = inject('redisUrl')) => {
  const client = connectRedis(url, 'test');
  connections.push(client);
  await waitReady([client], 5_000);
  return client;
};
const prefix = () => `unit-${randomBytes(4).toString('hex')}:`;

/**
 * A Redis server of the test's own, with a MONITOR connection on it. On the shared server
 * other files' commands flow all the time, and ioredis drops (as an uncaught "Command queue
 * state error") a monitored line that arrives in the same read as MONITOR's own OK.
 */
const watched = async () => {
  const server = await startRedis();
  const client = await connect(server.url);
  const monitor = await client.monitor();
  return {
    client,
    monitor,
    async close() {
      monitor.disconnect();
      await server.destroy();
    },
  };
};

afterAll(async () => {
  await Promise.all(connections.map(closeRedis));
});

describe('RedisStore', () => {
  let store: RedisStore;
  beforeAll(async () => {
    store = new RedisStore(await connect(), prefix());
  });

  it('gets, sets and deletes strings; missing keys are undefined', async () => {
    expect(await store.get('a')).toBeUndefined();
    await store.set('a', 'één', 10_000);
    expect(await store.get('a')).toBe('één');
    expect(await store.getMany(['a', 'missing', 'a'])).toEqual(['één', undefined, 'één']);
    expect(await store.getMany([])).toEqual([]);
    await store.delete('a');
    expect(await store.get('a')).toBeUndefined();
  });

  it('expires keys after their TTL', async () => {
    // Long enough that a busy machine cannot delay the first read past it (50 ms once did).
    await store.set('short', 'x', 500);
    expect(await store.get('short')).toBe('x');
    await new Promise((r) => setTimeout(r, 550));
    expect(await store.get('short')).toBeUndefined();
  });

  it('setIfAbsent sets only a missing key', async () => {
    expect(await store.setIfAbsent('claim', '1', 10_000)).toBe(true);
    expect(await store.setIfAbsent('claim', '2', 10_000)).toBe(false);
    expect(await store.get('claim')).toBe('1');
  });

  it('incr counts atomically across connections, and the TTL restarts with each increment', async () => {
    const key = 'counter';
    const other = new RedisStore(await connect(), (store as unknown as { keyPrefix: string }).keyPrefix);
    // A TTL of 800 ms, waits of half of it: a busy machine's late timers stay well inside.
    const counts = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? store : other).incr(key, 800)));
    expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.incr(key, 800)).toBe(51);
    await new Promise((r) => setTimeout(r, 400));
    expect(await store.incr(key, 800)).toBe(52); // still alive: the TTL restarted
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await store.incr(key, 800)).toBe(1);
  });

  it('the increments of one turn go out as one command per key, each caller with its own count', async () => {
    const { client, monitor, close } = await watched();
    const keyPrefix = prefix();
    const fresh = new RedisStore(client, keyPrefix);
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((a) => a.startsWith(keyPrefix))) seen.push(args);
    });
    try {
      const counts = await Promise.all([
        ...Array.from({ length: 20 }, () => fresh.incr('hot', 10_000)),
        fresh.incr('cold', 10_000),
      ]);
      expect(counts.slice(0, 20).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(counts[20]).toBe(1);
      await new Promise((r) => setTimeout(r, 50));
      const increments = seen.filter((args) => /^evalsha$/i.test(args[0]!) || /^eval$/i.test(args[0]!));
      expect(increments.map((args) => [args.at(-3), args.at(-1)])).toEqual([
        [`${keyPrefix}hot`, '20'],
        [`${keyPrefix}cold`, '1'],
      ]);
    } finally {
      await close();
    }
  });

  it("sends one turn's calls of every store on a connection as one pipeline: writes in order, then one MGET of the distinct keys", async () => {
    const { client, monitor, close } = await watched();
    const [a, b] = [prefix(), prefix()];
    const one = new RedisStore(client, a);
    const two = new RedisStore(client, b);
    await Promise.all([one.set('x', 'old', 10_000), two.set('x', 'two', 10_000)]);
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((arg) => arg.startsWith(a) || arg.startsWith(b))) seen.push(args.map((arg) => arg.replace(a, 'A:').replace(b, 'B:')));
    });
    try {
      const answers = await Promise.all([
        one.get('x'), // asked before the write of the same turn: sent after it, so it sees it
        one.set('x', 'new', 10_000),
        one.getMany(['x', 'y', 'x']),
        two.getMany(['x', 'missing']),
        one.setIfAbsent('x', 'refused', 10_000),
        one.delete('y'),
        two.get('x'),
      ]);
      expect(answers).toEqual(['new', undefined, ['new', undefined, 'new'], ['two', undefined], false, undefined, 'two']);
      await new Promise((r) => setTimeout(r, 50));
      expect(seen.map((args) => args.slice(0, 2).map((arg, i) => (i === 0 ? arg.toLowerCase() : arg)))).toEqual([
        ['set', 'A:x'],
        ['set', 'A:x'],
        ['del', 'A:y'],
        ['mget', 'A:x'],
      ]);
      expect(seen.at(-1)!.slice(1)).toEqual(['A:x', 'A:y', 'B:x', 'B:missing']);
    } finally {
      await close();
    }
  });

  it("sends a turn's calls in one write, and makes no ioredis Pipeline (each lives until a full collection)", async () => {
    const server = await startRedis();
    try {
      const client = await connect(server.url);
      const store = new RedisStore(client, prefix());
      await Promise.all([store.set('x', 'v', 10_000), store.incr('n', 10_000)]); // the script loaded
      // Reads the server did, less the watchdog's pings meanwhile (one a second).
      const reads = async () => {
        const info = (await client.call('info', 'stats', 'commandstats')) as string;
        return Number(/total_reads_processed:(\d+)/.exec(info)![1]) - Number(/cmdstat_ping:calls=(\d+)/.exec(info)?.[1] ?? 0);
      };
      const pipelines = vi.spyOn(client, 'pipeline');
      const before = await reads();
      const answers = await Promise.all([
        store.get('x'),
        store.set('y', 'w', 10_000),
        store.getMany(['x', 'y']),
        store.incr('n', 10_000),
        store.incr('m', 10_000),
        store.delete('z'),
      ]);
      const after = await reads();
      expect(answers).toEqual(['v', undefined, ['v', 'w'], 2, 1, undefined]);
      // One read for the turn's six commands, one for the second INFO.
      expect(after - before).toBe(2);
      expect(pipelines).not.toHaveBeenCalled();
    } finally {
      await server.destroy();
    }
  });

  it("a turn's calls all fail at once while Redis is unreachable, and work again afterwards", async () => {
    const server = await startRedis();
    try {
      const client = await connect(server.url);
      const store = new RedisStore(client, prefix());
      await store.set('k', 'v', 10_000);
      await server.stop();
      await eventually(() => !store.available, 5_000, 'the connection to drop');
      const settled = await Promise.allSettled([store.get('k'), store.getMany(['k', 'l']), store.set('k', 'w', 10_000), store.incr('n', 10_000)]);
      expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
      await server.start();
      await eventually(() => store.available, 10_000, 'the connection to come back');
      expect(await store.incr('n', 10_000)).toBe(1);
      expect(await store.getMany(['k', 'n'])).toEqual([undefined, '1']);
    } finally {
      await server.destroy();
    }
  });

  it('incr in the same tick as another command on a fresh connection answers both', async () => {
    // With auto-pipelining (off now, src/store/redis-client.ts), the pipeline a GET opened had
    // to know the script already: one made before the script was defined had no method for it, and ioredis threw an uncaught
    // TypeError from its callback bookkeeping (it crashed the process).
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      const fresh = new RedisStore(await connect(), prefix());
      const [value, count] = await Promise.all([fresh.get('x'), fresh.incr('n', 10_000)]);
      await new Promise((r) => setTimeout(r, 20));
      expect([value, count]).toEqual([undefined, 1]);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('incr still works when Redis has forgotten its script (a restart, SCRIPT FLUSH)', async () => {
    const client = await connect();
    const fresh = new RedisStore(client, prefix());
    expect(await fresh.incr('n', 10_000)).toBe(1);
    await client.script('FLUSH');
    const results = await Promise.all([fresh.incr('n', 10_000), fresh.incr('n', 10_000), fresh.incr('m', 10_000)]);
    expect(results).toEqual([2, 3, 1]);
  });

  it('keeps prefixes apart, and clear() removes only its own keys', async () => {
    const client = await connect();
    const one = new RedisStore(client, prefix());
    const two = new RedisStore(client, prefix());
    await one.set('k', 'one', 10_000);
    await two.set('k', 'two', 10_000);
    expect([await one.get('k'), await two.get('k')]).toEqual(['one', 'two']);
    await one.clear();
    expect([await one.get('k'), await two.get('k')]).toEqual([undefined, 'two']);
  });

  it('fails at once, without queueing, when Redis is unreachable', async () => {
    const dead = connectRedis(`redis://127.0.0.1:${await freePort()}`, 'dead');
    connections.push(dead);
    const store = new RedisStore(dead, 'x:');
    expect(store.available).toBe(false);
    const started = Date.now();
    await expect(store.get('k')).rejects.toThrow();
    await expect(store.incr('k', 1000)).rejects.toThrow();
    // Queued, they would wait for reconnection attempts (seconds); a second allows for a busy machine.
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});

describe('FallbackStore and CacheStore while Redis is unreachable', () => {
  it('FallbackStore counts in memory while Redis is down', async () => {
    const dead = connectRedis(`redis://127.0.0.1:${await freePort()}`, 'dead');
    connections.push(dead);
    const errors: unknown[] = [];
    const store = new FallbackStore(new RedisStore(dead, 'x:'), new MemoryStore(), (e) => errors.push(e));
    expect(await store.incr('rl', 60_000)).toBe(1);
    expect(await store.incr('rl', 60_000)).toBe(2);
    await store.set('apq', 'query', 60_000);
    expect(await store.get('apq')).toBe('query');
  });

  it('FallbackStore uses Redis while it is up', async () => {
    const shared = new RedisStore(await connect(), prefix());
    const local = new MemoryStore();
    const store = new FallbackStore(shared, local);
    await store.incr('rl', 60_000);
    expect(await shared.get('rl')).toBe('1');
    expect(await local.get('rl')).toBeUndefined();
  });

  it('CacheStore rejects while down, remembers a missed write and replays it once Redis is back', async () => {
    let server: RedisServer | undefined = await startRedis();
    try {
      const client = await connect(server.url);
      const shared = new RedisStore(client, 'c:');
      const cache = new CacheStore(shared, { retryMs: 100 });
      await cache.set('version', 'v1', 60_000);
      await server.stop();
      await eventually(() => !shared.available, 5_000, 'the connection to drop');
      await expect(cache.getMany(['entry', 'version'])).rejects.toThrow();
      await expect(cache.set('version', 'v2', 60_000)).rejects.toThrow();
      await expect(cache.delete('entry')).rejects.toThrow();
      expect(cache.missedWrites).toBe(2);
      await server.start();
      // Until the replay, reads of those keys bypass the cache even though Redis answers.
      await eventually(() => cache.missedWrites === 0, 10_000, 'the replay');
      expect(await cache.get('version')).toBe('v2');
      expect(await cache.get('entry')).toBeUndefined();
      await cache.close();
    } finally {
      await server?.destroy();
      server = undefined;
    }
  });

  it('CacheStore bypasses a key whose write was missed until it is replayed', async () => {
    const shared = new RedisStore(await connect(), prefix());
    let failNext = true;
    const flaky = Object.create(shared) as RedisStore;
    flaky.set = async (key, value, ttl) => {
      if (failNext) throw new Error('timeout');
      return shared.set(key, value, ttl);
    };
    const cache = new CacheStore(flaky, { retryMs: 50 });
    await expect(cache.set('k', 'new', 60_000)).rejects.toThrow('timeout');
    await expect(cache.get('k')).rejects.toBeInstanceOf(CacheNotCurrentError);
    expect(await cache.get('other')).toBeUndefined(); // other keys are served
    failNext = false;
    await eventually(() => cache.missedWrites === 0, 5_000, 'the retry');
    expect(await cache.get('k')).toBe('new');
    await cache.close();
  });
});

describe('RedisPubSub', () => {
  let a: RedisPubSub;
  let b: RedisPubSub;
  let channelPrefix: string;
  let probe: Redis;
  beforeAll(async () => {
    channelPrefix = prefix();
    a = new RedisPubSub(await connect(), await connect(), { channelPrefix });
    b = new RedisPubSub(await connect(), await connect(), { channelPrefix });
    probe = await connect();
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  const numsub = async (channel: string) => ((await probe.pubsub('NUMSUB', channelPrefix + channel)) as [string, number])[1];

  it('delivers locally at once (the listener exists when subscribe returns), in order', async () => {
    const it = a.subscribe<number>('local');
    await a.publish('local', 1);
    await a.publish('local', 2);
    expect(await it.next()).toEqual({ value: 1, done: false });
    expect(await it.next()).toEqual({ value: 2, done: false });
    await it.return!();
  });

  it('delivers to the other instance, in publish order, once, and not back to the publisher twice', async () => {
    const onB = b.subscribe<{ n: number }>('x');
    const onA = a.subscribe<{ n: number }>('x');
    await eventually(async () => (await numsub('x')) === 2, 5_000, 'both to subscribe');
    for (let n = 1; n <= 20; n++) await a.publish('x', { n });
    const fromB: number[] = [];
    for (let i = 0; i < 20; i++) fromB.push(((await onB.next()).value as { n: number }).n);
    expect(fromB).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    const fromA: number[] = [];
    for (let i = 0; i < 20; i++) fromA.push(((await onA.next()).value as { n: number }).n);
    expect(fromA).toEqual(fromB);
    await new Promise((r) => setTimeout(r, 50));
    expect(a.received).toBe(0); // its own echo was skipped
    await onA.return!();
    await onB.return!();
  });

  it('subscribes in Redis for the first listener of a channel and unsubscribes after the last', async () => {
    const one = b.subscribe('shared');
    const two = b.subscribe('shared');
    await eventually(async () => (await numsub('shared')) === 1, 5_000, 'one SUBSCRIBE');
    expect(b.listenerCount()).toBe(2);
    await one.return!();
    expect(await numsub('shared')).toBe(1);
    const pending = two.next();
    await two.return!();
    expect(await pending).toEqual({ value: undefined, done: true });
    await eventually(async () => (await numsub('shared')) === 0, 5_000, 'the UNSUBSCRIBE');
    expect(b.listenerCount()).toBe(0);
    expect(b.channelCount()).toBe(0);
  });

  it('re-subscribes after losing its connection and delivers again', async () => {
    const it = b.subscribe<string>('resub');
    await eventually(async () => (await numsub('resub')) === 1, 5_000, 'the SUBSCRIBE');
    await probe.client('KILL', 'TYPE', 'pubsub'); // drops every subscriber connection
    await eventually(async () => (await numsub('resub')) === 1, 10_000, 'the re-SUBSCRIBE');
    await a.publish('resub', 'again');
    expect(await it.next()).toEqual({ value: 'again', done: false });
    await it.return!();
  });

  it('publishing while Redis is down neither throws nor blocks; local listeners still get the event', async () => {
    const deadUrl = `redis://127.0.0.1:${await freePort()}`;
    const [pub, sub] = [connectRedis(deadUrl, 'p'), connectRedis(deadUrl, 's')];
    connections.push(pub, sub);
    const dead = new RedisPubSub(pub, sub);
    const it = dead.subscribe<string>('c');
    await expect(dead.publish('c', 'hello')).resolves.toBeUndefined();
    expect(await it.next()).toEqual({ value: 'hello', done: false });
    await dead.close();
    expect(await it.next()).toEqual({ value: undefined, done: true });
  });

  it('close() ends every iterator', async () => {
    const pubsub = new RedisPubSub(await connect(), await connect(), { channelPrefix: prefix() });
    const it = pubsub.subscribe('c');
    const pending = it.next();
    await pubsub.close();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(pubsub.listenerCount()).toBe(0);
  });
});
