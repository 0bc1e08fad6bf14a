import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import type { CacheStore } from '../../../src/store/resilient.js';
import { signIn, type SignedIn } from '../../helpers/auth.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { startServer, type TestServer } from '../../helpers/server.js';
import { eventually, freshDatabase } from './instances.js';

/**
 * docs/schema.md ("Caching"): `post(id)` is never stale after a write — also when the write happens
 * while Redis is down and Redis comes back WITH its data (a persistent Redis, or a
 * network partition between one instance and Redis). The writer's invalidation failed;
 * the entry cached before the outage is still in Redis. The writer replays its missed
 * invalidation as soon as it reconnects, and bypasses the cache for that post until it
 * has. Two instances (in-process here, to look at the writer's store) on one database.
 */
let redisServer: RedisServer;
let database: { url: string; drop(): Promise<void> };
let a: TestServer;
let b: TestServer;
let admin: SignedIn;
const prefix = 'outage:';

beforeAll(async () => {
  redisServer = await startRedis({ persistent: true });
  database = await freshDatabase(inject('postgresUrl'));
  const env = { DATABASE_URL: database.url, REDIS_URL: redisServer.url, REDIS_KEY_PREFIX: prefix, PUBLIC_URL: 'http://127.0.0.1:8080' };
  a = await startServer({ ...env, SEED_DEMO_DATA: 'auto' });
  b = await startServer(env);
  admin = await signIn(a, 'admin@inkwell.test');
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await database?.drop();
  await redisServer?.destroy();
});

const lookup = 'query ($id: ID!) { post(id: $id) { title } }';
const titleOn = async (server: TestServer, id: string) => (await server.gql(lookup, { id })).body.data?.post?.title as string;

it('a post updated while Redis is down is not served stale once Redis is back with its data', async () => {
  const id = (await a.inkwell.backends.db.kysely.selectFrom('posts').select('id').where('title', '=', 'House rules').executeTakeFirstOrThrow()).id;
  expect(await titleOn(b, id)).toBe('House rules');
  expect(await titleOn(b, id)).toBe('House rules'); // cached in Redis now
  const probe = new Redis(redisServer.url);
  const entryKey = `${prefix}cache:post:${id}`;
  expect(await probe.exists(entryKey)).toBe(1);
  probe.disconnect();

  await redisServer.stop(); // a clean shutdown: the data is on disk
  await eventually(async () => (await a.inkwell.backends.redisStatus?.()) === 'down', 10_000, 'A to notice');
  const updated = await a.gql('mutation ($id: ID!) { updatePost(id: $id, title: "House rules, revised") { title } }', { id }, { headers: admin.headers });
  expect(updated.body.errors).toBeUndefined();
  const store = a.inkwell.backends.kv as CacheStore;
  expect(store.missedWrites).toBeGreaterThan(0); // the bumps could not reach Redis
  expect(await titleOn(a, id)).toBe('House rules, revised');
  expect(await titleOn(b, id)).toBe('House rules, revised');

  await redisServer.start();
  const after = new Redis(redisServer.url);
  // Redis came back with the old entry: without the replay, it would be served.
  expect(await after.exists(entryKey)).toBe(1);
  await eventually(() => store.missedWrites === 0, 15_000, 'A to replay its missed invalidation');
  after.disconnect();
  await eventually(async () => (await b.inkwell.backends.redisStatus?.()) === 'up', 15_000, 'B to reconnect');
  expect(await titleOn(b, id)).toBe('House rules, revised');
  expect(await titleOn(a, id)).toBe('House rules, revised');
  // And the cache works again: a second read is served from Redis.
  const before = b.inkwell.backends.db.queryCount;
  expect(await titleOn(b, id)).toBe('House rules, revised');
  expect(b.inkwell.backends.db.queryCount).toBe(before);
});
