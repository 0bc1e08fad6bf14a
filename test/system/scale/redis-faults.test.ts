import { createHash } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { query } from '../../helpers/postgres.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { eventually, freshDatabase, randomIp, startInstance, type Instance } from './instances.js';

/**
 * docs/operations.md ("When Redis is down"): Redis being down degrades but does not stop the service, and once it
 * is back everything resumes without a restart. Two instances on a redis-server of this
 * file's own, which is killed and started again while a subscriber is connected.
 */
let redisServer: RedisServer;
let a: Instance;
let b: Instance;
/** Started while Redis is down. */
let c: Instance | undefined;
let env: Record<string, string>;
let database: { url: string; drop(): Promise<void> };
let client: Client;
let token: { authorization: string };
let postId: string;
const events: any[] = [];
const prefix = 'faults:';

const lookup = 'query ($id: ID!) { post(id: $id) { id title reactions(limit: 50) { type } } }';
const types = (res: { body: any }) => (res.body.data.post.reactions as { type: string }[]).map((r) => r.type);
const react = 'mutation ($id: ID!, $type: String!) { addReaction(postId: $id, type: $type) { type } }';

beforeAll(async () => {
  redisServer = await startRedis();
  database = await freshDatabase(inject('postgresUrl'));
  env = {
    DATABASE_URL: database.url,
    REDIS_URL: redisServer.url,
    REDIS_KEY_PREFIX: prefix,
    PUBLIC_URL: 'http://127.0.0.1:8080',
    SEED_DEMO_DATA: 'auto',
  };
  // A first (it migrates and seeds), then B.
  a = await startInstance('A', env);
  b = await startInstance('B', env);
  postId = (await query(database.url, "select id from posts where title = 'Poetry in orbit'")).rows[0].id as string;

  const login = await b.post('/api/auth/login', { email: 'admin@inkwell.test', password: 'inkwell-demo' });
  expect(login.status).toBe(200);
  token = { authorization: `Bearer ${login.body.accessToken as string}` };

  client = createClient({ url: `${a.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
  client.subscribe(
    { query: 'subscription ($id: ID!) { postReactionAdded(postId: $id) { type } }', variables: { id: postId } },
    { next: (r) => events.push(r.data?.['postReactionAdded']), error: (e) => events.push({ error: String(e) }), complete: () => {} },
  );
  await subscribedInRedis();
});

afterAll(async () => {
  await client?.dispose();
  await Promise.all([a?.stop(), b?.stop(), c?.stop()]);
  await database?.drop();
  await redisServer?.destroy();
});

/** Waits until A's subscriber connection holds the post's channel in (the current) Redis. */
async function subscribedInRedis(): Promise<void> {
  const channel = `${prefix}postReactionAdded:${postId}`;
  await eventually(async () => {
    const probe = new Redis(redisServer.url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      return ((await probe.pubsub('NUMSUB', channel)) as [string, number])[1] === 1;
    } finally {
      probe.disconnect();
    }
  }, 15_000, 'A to subscribe in Redis');
}

async function addReaction(type: string) {
  const res = await b.gql(react, { id: postId, type }, { headers: token });
  expect(res.status).toBe(200);
  expect(res.body.errors).toBeUndefined();
}

describe('Redis restarted while a subscriber is connected', () => {
  it('delivers across instances before the outage', async () => {
    await addReaction('before');
    await eventually(() => events.some((e) => e?.type === 'before'), 10_000, 'the event before the outage');
  });

  it('keeps answering HTTP while Redis is down, and /readyz says degraded', async () => {
    await redisServer.stop();
    // An instance that starts now waits a few seconds for Redis, then serves degraded.
    const starting = startInstance('C', env);
    for (const instance of [a, b]) {
      await eventually(async () => (await instance.get('/readyz')).body.redis === 'down', 10_000, `${instance.name} to notice`);
      const ready = await instance.get('/readyz');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'degraded', database: 'up', redis: 'down' });
    }
    // Reads (the post cache is bypassed) and writes go on, on both instances.
    expect(types(await a.gql(lookup, { id: postId }))).not.toContain('during');
    await addReaction('during');
    expect(types(await a.gql(lookup, { id: postId }))).toContain('during');
    const renamed = await a.gql('mutation ($id: ID!) { updatePost(id: $id, title: "Poetry, degraded") { title } }', { id: postId }, { headers: token });
    expect(renamed.body.errors).toBeUndefined();
    expect((await b.gql(lookup, { id: postId })).body.data.post.title).toBe('Poetry, degraded');
    // Persisted queries register per instance meanwhile (the fallback store).
    const text = '{ __typename }';
    const extensions = { persistedQuery: { version: 1, sha256Hash: createHash('sha256').update(text).digest('hex') } };
    expect((await a.gql(text, undefined, { extensions })).status).toBe(200);
    expect((await a.gql(undefined, undefined, { extensions })).body.data).toEqual({ __typename: 'Query' });
    // Rate limits fall back to per-instance counting: requests are still answered.
    const ip = randomIp();
    for (let i = 0; i < 3; i++) expect((await b.gql('{ __typename }', undefined, { ip })).status).toBe(200);

    c = await starting;
    expect((await c.get('/readyz')).body).toEqual({ status: 'degraded', database: 'up', redis: 'down' });
    expect((await c.gql(lookup, { id: postId })).body.data.post.title).toBe('Poetry, degraded');
  });

  it('resumes without a restart: /readyz ok, re-subscribed, events delivered again', async () => {
    await redisServer.start();
    for (const instance of [a, b, c!]) {
      await eventually(async () => (await instance.get('/readyz')).body.status === 'ok', 15_000, `${instance.name} to reconnect`);
      expect((await instance.get('/readyz')).body).toEqual({ status: 'ok', database: 'up', redis: 'up' });
    }
    await subscribedInRedis();
    await addReaction('after');
    await eventually(() => events.some((e) => e?.type === 'after'), 10_000, 'the event after the outage');
    // The subscription itself was never interrupted: no error, no completion.
    expect(events.filter((e) => e?.error)).toEqual([]);
    // The cache is back in use, and fresh.
    expect((await b.gql(lookup, { id: postId })).body.data.post.title).toBe('Poetry, degraded');
    expect((await a.gql(lookup, { id: postId })).body.data.post.title).toBe('Poetry, degraded');
  });
});
