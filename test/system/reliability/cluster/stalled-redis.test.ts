import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startLoad, type Outcome } from '../../../helpers/load.js';
import { pauseTree, type Paused } from '../../../helpers/pause.js';
import { processBackend, type ProcessBackend } from '../../../helpers/process-backend.js';
import { startRedis, type RedisServer } from '../../../helpers/redis.js';
import { eventually, randomIp, startInstance, type Instance } from '../../scale/instances.js';

/**
 * A Redis that stops answering without closing its connections (SIGSTOP), under load on
 * two instances (README, "Operations under failure"). Unlike a clean shutdown nothing
 * tells the instances: each command waits for REDIS_COMMAND_TIMEOUT_MS (500 ms here),
 * and a watchdog ping that times out drops the connection, so that calls then fail at
 * once. Every request still succeeds (writes do not hang on the cache-version bump),
 * `/readyz` says `degraded`, and once Redis answers again both instances go back to it
 * by themselves: shared events, fresh caches, `/readyz` ok.
 */
let redis: RedisServer;
let backend: ProcessBackend;
let a: Instance;
let b: Instance;
let paused: Paused | undefined;
let subscriber: Client | undefined;

beforeAll(async () => {
  redis = await startRedis();
  backend = await processBackend();
  const env = {
    ...backend.env,
    REDIS_URL: redis.url,
    REDIS_COMMAND_TIMEOUT_MS: '500',
    SEED_DEMO_DATA: 'auto',
    PUBLIC_URL: 'http://127.0.0.1:8080',
  };
  a = await startInstance('A', env);
  b = await startInstance('B', env);
});

afterAll(async () => {
  paused?.resume();
  await subscriber?.dispose();
  const codes = await Promise.all([a?.stop(), b?.stop()]);
  await backend?.drop();
  await redis?.destroy();
  expect(codes).toEqual([0, 0]);
});

it('a frozen Redis: every request still succeeds, /readyz degraded, and all resumes by itself', async () => {
  const login = await a.post('/api/auth/login', { email: 'admin@inkwell.test', password: 'inkwell-demo' });
  expect(login.status).toBe(200);
  const admin = { authorization: `Bearer ${login.body.accessToken as string}` };
  const [post] = await backend.rows<{ id: string; title: string }>('select id, title from posts where published = 1 order by created_at limit 1');
  const lookup = 'query ($id: ID!) { post(id: $id) { title } }';
  const titleOn = async (on: Instance) => (await on.gql(lookup, { id: post!.id })).body.data?.post?.title as string | undefined;
  // Cached in Redis (read through B, twice).
  expect(await titleOn(b)).toBe(post!.title);
  expect(await titleOn(b)).toBe(post!.title);

  // A subscriber on B hears accounts created through A (events travel through Redis).
  const events: string[] = [];
  subscriber = createClient({ url: `${b.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
  subscriber.subscribe({ query: 'subscription { userCreated { email } }' }, { next: (r) => events.push((r.data as any).userCreated.email), error: () => {}, complete: () => {} });
  const createOnA = async (email: string) => {
    const res = await a.gql('mutation ($e: String!) { createUser(name: "Stall", email: $e) { id } }', { e: email }, { headers: admin });
    expect(res.body.errors).toBeUndefined();
  };
  await eventually(async () => {
    await createOnA(`before-${Date.now()}@example.test`);
    return events.length > 0;
  }, 10_000, 'an event across instances');

  // Reads (rate-limited and cached through Redis) and writes, on both instances.
  const targets = [a, b];
  const load = startLoad({
    clients: 10,
    target: (client) => targets[client % 2]!.url,
    operation: (client, n) =>
      n % 3 === 2
        ? { query: 'mutation ($t: String!) { addBook(title: $t, author: "Stall") { id } }', variables: { t: `stall ${client}.${n}` }, headers: { ...admin, 'x-forwarded-for': randomIp() } }
        : { query: 'query ($n: Int!) { books(limit: $n) { id } }', variables: { n: 1 + (n % 5) }, headers: { 'x-forwarded-for': `10.7.0.${client}` } },
  });
  await eventually(() => load.outcomes.length >= 100, 10_000, 'load');

  const frozenAt = Date.now();
  paused = pauseTree(redis.pid()!);
  // Both instances notice and say so, promptly, without their probe hanging.
  for (const instance of [a, b]) {
    await eventually(async () => {
      const started = Date.now();
      const res = await instance.get('/readyz');
      expect(Date.now() - started).toBeLessThan(4_000);
      return res.status === 200 && res.body.redis === 'down';
    }, 10_000, '/readyz to say degraded');
    expect((await instance.get('/readyz')).body).toEqual({ status: 'degraded', database: 'up', redis: 'down' });
    // The watchdog dropped the frozen connections: from then on calls fail at once
    // instead of each waiting out its timeout.
    await eventually(() => instance.logs.some((l) => String(l.msg).startsWith('Redis connection lost') && Number(l.time) >= frozenAt), 5_000, 'the stall to be noticed');
  }
  // A write while Redis is frozen is acknowledged (it does not wait for the version bump).
  const newTitle = `Retitled while Redis was frozen ${Date.now()}`;
  const updated = await a.gql('mutation ($id: ID!, $t: String!) { updatePost(id: $id, title: $t) { title } }', { id: post!.id, t: newTitle }, { headers: admin });
  expect(updated.body.errors).toBeUndefined();
  expect(await titleOn(a)).toBe(newTitle);
  await createOnA(`during-${Date.now()}@example.test`);
  const frozenFor = Date.now() - frozenAt;
  await new Promise((r) => setTimeout(r, Math.max(0, 3_000 - frozenFor)));

  paused.resume();
  const resumedAt = Date.now();
  for (const instance of [a, b]) {
    await eventually(async () => (await instance.get('/readyz')).body.status === 'ok', 15_000, '/readyz to recover');
  }
  // B serves the post as written through A (A replays its missed invalidation).
  await eventually(async () => (await titleOn(b)) === newTitle, 10_000, 'B to serve the new title');
  const freshAfterMs = Date.now() - resumedAt;
  // Events travel across instances again.
  const heard = events.length;
  await eventually(async () => {
    await createOnA(`after-${Date.now()}@example.test`);
    return events.length > heard;
  }, 15_000, 'events across instances again');
  await eventually(() => load.outcomes.filter((o) => o.startedAt > Date.now() - 1_000).length >= 50, 10_000, 'load after');
  await load.stop();

  const failed = (o: Outcome) => o.error !== undefined || o.status !== 200 || o.body?.errors !== undefined;
  const during = load.outcomes.filter((o) => o.startedAt >= frozenAt && o.startedAt < resumedAt);
  const slowest = Math.max(...during.map((o) => o.endedAt - o.startedAt));
  if (process.env.TEST_LOG_LEVEL) {
    const sorted = during.map((o) => o.endedAt - o.startedAt).sort((x, y) => x - y);
    console.log({ total: load.outcomes.length, during: during.length, p50: sorted[Math.floor(sorted.length / 2)], slowest, freshAfterMs });
  }
  expect(load.outcomes.filter(failed)).toEqual([]);
  expect(during.length).toBeGreaterThan(20);
  // Bounded by a few command timeouts, never an indefinite wait.
  expect(slowest).toBeLessThan(5_000);
  const books = load.outcomes.filter((o) => o.body?.data?.addBook?.id).map((o) => o.body.data.addBook.id as string);
  const stored = new Set((await backend.rows<{ id: string }>("select id from books where author = 'Stall'")).map((r) => r.id));
  expect(books.filter((id) => !stored.has(id))).toEqual([]);
}, 120_000);
