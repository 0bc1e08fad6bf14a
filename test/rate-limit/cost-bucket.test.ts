import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { CostBucket } from '../../src/rate-limit/cost-bucket.js';
import { scriptCalls, startRedis, type RedisServer } from '../helpers/redis.js';

/**
 * The bucket itself (src/rate-limit/cost-bucket.ts, docs/limits.md "Cost"): in memory on
 * a clock the test moves, exactly; in Redis on Redis's own clock, with the key it keeps.
 */

describe('in memory', () => {
  const make = (limit = 100, rate = 10) => {
    const clock = { now: 0 };
    return { clock, bucket: new CostBucket({ limit, restorePerSecond: rate }, undefined, undefined, () => clock.now) };
  };

  it('takes only what it holds, says when it will hold the rest, and refills by the time elapsed', async () => {
    const { clock, bucket } = make();
    expect(await bucket.take('k', 60)).toEqual({ allowed: true, available: 40, retryAfterSeconds: 0, shared: false });
    // 60 more are not there: nothing is taken, and 20 points at 10 a second take 2 s.
    expect(await bucket.take('k', 60)).toEqual({ allowed: false, available: 40, retryAfterSeconds: 2, shared: false });
    clock.now += 1_500; // 15 points back: 55, still short by 5 (rounded up to a second)
    expect(await bucket.take('k', 60)).toMatchObject({ allowed: false, available: 55, retryAfterSeconds: 1 });
    clock.now += 500;
    expect(await bucket.take('k', 60)).toMatchObject({ allowed: true, available: 0 });
    // Other keys have buckets of their own.
    expect(await bucket.take('other', 100)).toMatchObject({ allowed: true, available: 0 });
  });

  it('a cached answer needs its requested cost and keeps its actual cost; refunds never pass the limit', async () => {
    const { bucket } = make();
    expect(await bucket.take('k', 90, 10)).toMatchObject({ allowed: true, available: 90 });
    expect(await bucket.take('k', 95, 5)).toMatchObject({ allowed: false, available: 90 });
    expect(await bucket.take('k', 50)).toMatchObject({ allowed: true, available: 40 });
    expect(await bucket.give('k', 30, false)).toMatchObject({ allowed: true, available: 70 });
    expect(await bucket.give('k', 500, false)).toMatchObject({ available: 100 });
  });

  it('keeps no entry for a full bucket', async () => {
    const { clock, bucket } = make(100, 1);
    const local = (bucket as unknown as { local: { size: number } }).local;
    await bucket.take('a', 50);
    await bucket.take('b', 50);
    expect(local.size).toBe(2);
    await bucket.give('a', 50, false);
    expect(local.size).toBe(1);
    clock.now += 50_000;
    await bucket.take('b', 0); // refilled: full again, dropped
    expect(local.size).toBe(0);
  });

  it('holds at most 100,000 buckets: more callers drop the least recently used, which is then full', async () => {
    const { bucket } = make(100, 1);
    const local = (bucket as unknown as { local: { size: number } }).local;
    for (let i = 0; i <= 100_000; i++) await bucket.take(`caller ${i}`, 10);
    expect(local.size).toBe(100_000);
    // The first caller was dropped (a full bucket again); the most recent ones are kept.
    expect(await bucket.take('caller 0', 100)).toMatchObject({ allowed: true, available: 0 });
    expect(await bucket.take('caller 100000', 100)).toMatchObject({ allowed: false, available: 90 });
  });
});

describe('in Redis', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url);
    await client.ping();
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.destroy();
  });

  it('takes, refuses, refunds up to the limit, and keeps a key only while the bucket is not full', async () => {
    const bucket = new CostBucket({ limit: 1000, restorePerSecond: 1 }, { client, keyPrefix: 'cost-test:' }, (error) => {
      throw error;
    });
    const taken = await bucket.take('k', 600);
    expect(taken).toMatchObject({ allowed: true, shared: true });
    expect(taken.available).toBe(400);
    // 400 missing points at 1 a second: the key lives until the bucket would be full.
    const ttl = await client.pttl('cost-test:k');
    expect(ttl).toBeGreaterThan(395_000);
    expect(ttl).toBeLessThanOrEqual(600_000);
    const refused = await bucket.take('k', 900, 900);
    expect(refused.allowed).toBe(false);
    expect(refused.available).toBeGreaterThanOrEqual(400);
    expect(refused.retryAfterSeconds).toBeGreaterThan(400);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(500);
    // A cached answer: needs 300, keeps 100.
    expect((await bucket.take('k', 300, 100)).available).toBeGreaterThanOrEqual(300);
    // The refund is capped: the bucket is full, and its key gone.
    expect(await bucket.give('k', 5_000, true)).toMatchObject({ allowed: true, available: 1000, shared: true });
    expect(await client.exists('cost-test:k')).toBe(0);
  });

  it('calls of one turn on one key are one script call, each answered as if they had come one by one', async () => {
    const bucket = new CostBucket({ limit: 1000, restorePerSecond: 1 }, { client, keyPrefix: 'cost-turn:' }, (error) => {
      throw error;
    });
    const before = await scriptCalls(client);
    // In order: 400 taken (600 left), 700 refused, 500 taken (100 left), 200 given (300), 300 taken (0).
    const answers = await Promise.all([
      bucket.take('k', 400),
      bucket.take('k', 700),
      bucket.take('k', 500),
      bucket.give('k', 200, true),
      bucket.take('k', 300),
    ]);
    expect(answers.map((a) => [a.allowed, a.available])).toEqual([
      [true, 600],
      [false, 600],
      [true, 100],
      [true, 300],
      [true, 0],
    ]);
    expect((await scriptCalls(client)) - before).toBe(1);
    // The state left is the last call's: an empty bucket, refused the next point.
    expect((await bucket.take('k', 2)).allowed).toBe(false);
  });
});

describe('configuration', () => {
  it('defaults to 10,000 points refilled at 200 a second', () => {
    expect(loadConfig({}).cost).toEqual({ limit: 10_000, restorePerSecond: 200 });
    expect(loadConfig({ COST_LIMIT: '50', COST_RESTORE_PER_S: '5' }).cost).toEqual({ limit: 50, restorePerSecond: 5 });
  });

  it('names every variable at fault in one error', () => {
    let error: unknown;
    try {
      loadConfig({ COST_LIMIT: '0', COST_RESTORE_PER_S: 'fast', PORT: 'x' });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const named = (error as ConfigError).problems.map((p) => p.split(':')[0]);
    expect(named).toEqual(expect.arrayContaining(['COST_LIMIT', 'COST_RESTORE_PER_S', 'PORT']));
  });
});
