import { randomBytes } from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import WebSocket from 'ws';
import { query } from '../../helpers/postgres.js';
import { cookieValues, eventually, freshDatabase, randomIp, startInstance, type Instance } from './instances.js';
import { withoutCost } from '../../helpers/server.js';

/**
 * docs/operations.md ("Several instances"): two service processes on one PostgreSQL and one Redis behave
 * as one service. Both start at the same moment on an empty database (the migration and
 * seeding race), then every test talks to both.
 */
const RATE_LIMIT_MAX = 20;
const prefix = `scale-${randomBytes(4).toString('hex')}:`;
let a: Instance;
let b: Instance;
let database: { url: string; drop(): Promise<void> };
let redis: Redis;

beforeAll(async () => {
  database = await freshDatabase(inject('postgresUrl'));
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    REDIS_KEY_PREFIX: prefix,
    // One public origin for the whole service (the load balancer's): tokens carry it as `iss`.
    PUBLIC_URL: 'http://127.0.0.1:8080',
    SEED_DEMO_DATA: 'auto',
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    // A day: windows are fixed to the clock, and counts taken across a minute boundary would start over.
    RATE_LIMIT_WINDOW_MS: '86400000',
  };
  [a, b] = await Promise.all([startInstance('A', env), startInstance('B', env)]);
  redis = new Redis(inject('redisUrl'));
});

afterAll(async () => {
  const codes = await Promise.all([a?.stop(), b?.stop()]);
  redis?.disconnect();
  await database?.drop();
  // SIGTERM drains and exits 0 (docs/operations.md).
  expect(codes).toEqual([0, 0]);
});

interface SignedIn {
  accessToken: string;
  cookies: Record<string, string>;
  headers: { authorization: string };
}

async function signIn(on: Instance, email: string): Promise<SignedIn> {
  const res = await fetch(`${on.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': randomIp() },
    body: JSON.stringify({ email, password: 'inkwell-demo' }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const body = (await res.json()) as { accessToken: string };
  return { accessToken: body.accessToken, cookies: cookieValues(res), headers: { authorization: `Bearer ${body.accessToken}` } };
}

const cookieHeader = (cookies: Record<string, string>) =>
  Object.entries(cookies)
    .map(([k, v]) => `${k}=${v}`)
    .join('; ');

async function postIdByTitle(title: string): Promise<string> {
  const { rows } = await query(database.url, 'select id from posts where title = $1', [title]);
  return rows[0].id as string;
}

describe('start-up', () => {
  it('two instances started at once migrate once and seed once', async () => {
    const { rows } = await query(database.url, 'select name from kysely_migration order by name');
    expect(rows.map((r) => r.name)).toEqual(['001_initial', '002_refresh_successor', '003_newest_per_key_index', '004_drafts_newest_index']);
    const migratedBy = [a, b].filter((i) => i.logs.some((l) => l.msg === 'database migrated'));
    expect(migratedBy).toHaveLength(1);
    const users = await query(database.url, "select count(*)::int as n from users where email like '%@inkwell.test'");
    expect(users.rows[0].n).toBe(7);
  });

  it('/readyz on both names PostgreSQL and Redis as up', async () => {
    for (const instance of [a, b]) {
      const res = await instance.get('/readyz');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok', database: 'up', redis: 'up' });
    }
  });
});

describe('shared state', () => {
  it('a persisted query registered through A is served by B', async () => {
    const text = `{ books(limit: 1) { title } __typename }`;
    const { createHash } = await import('node:crypto');
    const sha256Hash = createHash('sha256').update(text).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };
    const before = await b.gql(undefined, undefined, { extensions });
    expect(before.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await a.gql(text, undefined, { extensions });
    expect(registered.status).toBe(200);
    const served = await b.gql(undefined, undefined, { extensions });
    expect(served.status).toBe(200);
    expect(withoutCost(served.body)).toEqual(withoutCost(registered.body));
  });

  it('the rate limit is shared: requests through A and B count together', async () => {
    const ip = randomIp();
    const statuses: number[] = [];
    for (let i = 0; i < RATE_LIMIT_MAX; i++) {
      statuses.push((await (i % 2 === 0 ? a : b).gql('{ __typename }', undefined, { ip })).status);
    }
    expect(statuses.every((s) => s === 200)).toBe(true);
    // Per-instance counting would allow RATE_LIMIT_MAX more on each instance.
    const overA = await a.gql('{ __typename }', undefined, { ip });
    const overB = await b.gql('{ __typename }', undefined, { ip });
    expect(overA.status).toBe(429);
    expect(overB.status).toBe(429);
    expect(overB.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED');
    // Another client is not affected.
    expect((await b.gql('{ __typename }')).status).toBe(200);
  });

  it('a post updated through A is never served stale from B’s cache', async () => {
    const editor = await signIn(a, 'editor@inkwell.test');
    const id = await postIdByTitle('Welcome to Inkwell');
    const lookup = 'query ($id: ID!) { post(id: $id) { id title tags likes } }';
    // Warm B's (shared) cache, and A's for good measure.
    for (const instance of [b, b, a]) {
      expect((await instance.gql(lookup, { id })).body.data.post.title).toBe('Welcome to Inkwell');
    }
    // The entry lives in Redis, where both instances read it.
    expect(await redis.exists(`${prefix}cache:post:${id}`)).toBe(1);
    for (let round = 1; round <= 5; round++) {
      const title = `Welcome, round ${round}`;
      const update = await a.gql('mutation ($id: ID!, $t: String!) { updatePost(id: $id, title: $t) { title } }', { id, t: title }, { headers: editor.headers });
      expect(update.body.errors).toBeUndefined();
      // Immediately after the write is acknowledged, B must serve it.
      expect((await b.gql(lookup, { id })).body.data.post.title).toBe(title);
      expect((await b.gql(lookup, { id })).body.data.post.title).toBe(title);
    }
    // A reaction through B changes `likes`; A serves the new count at once.
    const reader = await signIn(b, 'editor2@inkwell.test'); // no reaction on this post yet
    const likes = (await a.gql(lookup, { id })).body.data.post.likes as number;
    const reacted = await b.gql('mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }', { id }, { headers: reader.headers });
    expect(reacted.body.errors).toBeUndefined();
    expect((await a.gql(lookup, { id })).body.data.post.likes).toBe(likes + 1);
  });

  it('sign-out on A makes the refresh token fail on B', async () => {
    const session = await signIn(a, 'bob@inkwell.test');
    // The refresh token works on B before sign-out (and rotates).
    const refreshed = await fetch(`${b.url}/api/auth/refresh`, {
      method: 'POST',
      headers: { cookie: `refresh-token=${session.cookies['refresh-token']}`, 'x-forwarded-for': randomIp() },
    });
    expect(refreshed.status).toBe(200);
    const rotated = cookieValues(refreshed);
    const accessToken = ((await refreshed.json()) as { accessToken: string }).accessToken;

    const csrf = await fetch(`${a.url}/api/auth/csrf`, { headers: { 'x-forwarded-for': randomIp() } });
    const { csrfToken } = (await csrf.json()) as { csrfToken: string };
    const signOut = await fetch(`${a.url}/api/auth/signout`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${accessToken}`,
        cookie: cookieHeader(cookieValues(csrf)),
        'x-forwarded-for': randomIp(),
      },
      body: JSON.stringify({ csrfToken, callbackUrl: '/' }),
    });
    expect(signOut.status).toBe(302);

    const afterwards = await fetch(`${b.url}/api/auth/refresh`, {
      method: 'POST',
      headers: { cookie: `refresh-token=${rotated['refresh-token']}`, 'x-forwarded-for': randomIp() },
    });
    expect(afterwards.status).toBe(401);
    // And the access token of the revoked session no longer works on B either.
    const me = await fetch(`${b.url}/api/me`, { headers: { authorization: `Bearer ${accessToken}`, 'x-forwarded-for': randomIp() } });
    expect(me.status).toBe(401);
  });
});

describe('subscriptions across instances', () => {
  let client: Client | undefined;
  afterAll(async () => {
    await client?.dispose();
  });

  it('a subscriber on A receives a reaction added through B', async () => {
    const id = await postIdByTitle('Ten novels for a long winter');
    client = createClient({ url: `${a.url.replace(/^http/, 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0 });
    const received: any[] = [];
    const errors: unknown[] = [];
    client.subscribe(
      { query: 'subscription ($id: ID!) { postReactionAdded(postId: $id) { type post { id } user { name } } }', variables: { id } },
      { next: (r) => received.push(r), error: (e) => errors.push(e), complete: () => {} },
    );
    // A has subscribed in Redis once the channel has a subscriber there.
    const channel = `${prefix}postReactionAdded:${id}`;
    await eventually(async () => ((await redis.pubsub('NUMSUB', channel)) as [string, number])[1] === 1, 10_000, 'A to subscribe');

    const carol = await signIn(b, 'carol@inkwell.test');
    const added = await b.gql('mutation ($id: ID!) { addReaction(postId: $id, type: "wow") { id } }', { id }, { headers: carol.headers });
    expect(added.body.errors).toBeUndefined();
    await eventually(() => received.length === 1, 10_000, 'the event on A');
    expect(errors).toEqual([]);
    expect(withoutCost(received[0])).toEqual({ data: { postReactionAdded: { type: 'wow', post: { id }, user: { name: 'Carol Danvers' } } } });
  });
});
