import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { eventually, expectAvailable, post, seed, type Cost } from './helpers.js';

/**
 * docs/limits.md, "Cost": with Redis a caller's bucket is one for every instance,
 * updated atomically; while Redis is down each instance counts on its own, and the
 * shared bucket is back once Redis is. Two instances on one Redis of this file's own
 * (stopped and started here), each on its own database: the bucket is keyed by the
 * caller, not by anything in the database. A bucket of 1,000 regaining 1 point a second.
 */

const LIMIT = 1000;
/** Asks 100 and returns 100 posts: costs 100 on either instance. */
const HUNDRED = '{ posts(limit: 100) { id } }';

let redis: RedisServer;
let a: TestServer;
let b: TestServer;

beforeAll(async () => {
  redis = await startRedis();
  const env = {
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: `cost-${randomBytes(4).toString('hex')}:`,
    COST_LIMIT: String(LIMIT),
    COST_RESTORE_PER_S: '1',
    TRUST_PROXY: 'true',
    // An outage is noticed at once: calls fail fast instead of waiting a second each.
    REDIS_COMMAND_TIMEOUT_MS: '200',
  };
  [a, b] = await Promise.all([startServer(env), startServer(env)]);
  await Promise.all([seed(a, [100]), seed(b, [100])]);
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await redis?.destroy();
});

const spend = async (server: TestServer, ip: string): Promise<Cost> => {
  const res = await post(server, HUNDRED, { ip });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.extensions.cost).toMatchObject({ requestedQueryCost: 100, actualQueryCost: 100 });
  return res.body.extensions.cost;
};

describe('two instances on one Redis', () => {
  it('share one bucket per caller: what one instance took, the other sees gone', async () => {
    const ip = '10.3.0.1';
    const since = performance.now();
    expectAvailable(await spend(a, ip), LIMIT - 100, since);
    expectAvailable(await spend(b, ip), LIMIT - 200, since);
    expectAvailable(await spend(a, ip), LIMIT - 300, since);
    expectAvailable(await spend(b, ip), LIMIT - 400, since);
  });

  it('take atomically: concurrent operations on both instances never overdraw the bucket', async () => {
    const ip = '10.3.0.2';
    // Twenty operations of 100 against a bucket of 1,000, ten on each instance at once:
    // ten pass, the others are refused (another 100 points would take 100 s to come back).
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post(i % 2 ? a : b, HUNDRED, { ip })));
    expect(answers.map((res) => res.status).sort()).toEqual([...Array(10).fill(200), ...Array(10).fill(429)]);
  });

  it('while Redis is down each instance counts alone; once it is back the bucket is shared again', async () => {
    await redis.stop();
    await eventually(async () => (await a.inkwell.backends.redisStatus!()) === 'down' && (await b.inkwell.backends.redisStatus!()) === 'down', 'both instances to see Redis down');
    const ip = '10.3.0.3';
    const since = performance.now();
    // Each instance's own bucket: the other's spending is not seen.
    expectAvailable(await spend(a, ip), LIMIT - 100, since);
    expectAvailable(await spend(b, ip), LIMIT - 100, since);
    expectAvailable(await spend(a, ip), LIMIT - 200, since);

    await redis.start();
    await eventually(async () => (await a.inkwell.backends.redisStatus!()) === 'up' && (await b.inkwell.backends.redisStatus!()) === 'up', 'both instances to reconnect');
    // Back in Redis, which came back empty: one shared bucket from full, the memory ones left aside.
    const back = performance.now();
    const other = '10.3.0.4';
    expectAvailable(await spend(a, other), LIMIT - 100, back);
    expectAvailable(await spend(b, other), LIMIT - 200, back);
  });
});
