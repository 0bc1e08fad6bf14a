import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { User } from '../../src/domain/types.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { expectAvailable, post, seed, Socket, eventually, type Cost } from './helpers.js';

/**
 * docs/limits.md, "Cost": every response of an operation says what it asked, what it
 * cost and where the caller's bucket stands, over HTTP (with X-Cost-Limit and
 * X-Cost-Remaining) and in a WebSocket `next`; what a result did not use goes back, a
 * cached answer costs what its execution cost, a subscription pays when it starts.
 * A bucket of 1,000 regaining 1 point a second: the readings are checked against the
 * points that may have come back meanwhile, never against a time.
 */

const LIMIT = 1000;
let server: TestServer;
let authors: User[];

beforeAll(async () => {
  server = await startServer({ COST_LIMIT: String(LIMIT), COST_RESTORE_PER_S: '1', TRUST_PROXY: 'true' });
  // Three users: two, one and no posts.
  authors = await seed(server, [2, 1, 0]);
});
afterAll(async () => {
  await server?.close();
});

/** Three operations of different cost, with what they ask and what they return with three users and three posts. */
const operations = () => [
  { name: 'one user', query: 'query ($id: ID!) { user(id: $id) { name } }', variables: { id: authors[0]!.id }, requested: 1, actual: 1 },
  { name: 'a list of ten', query: '{ users(limit: 10) { id name } }', variables: undefined, requested: 10, actual: 3 },
  {
    name: 'users, their posts and authors',
    query: '{ users { name posts { title author { name } } } }',
    variables: undefined,
    // 20 × (1 + 10 × (1 + 1)); returned: 3 users, 3 posts, 3 authors.
    requested: 420,
    actual: 9,
  },
];

describe('extensions.cost', () => {
  it('over HTTP: requested and actual cost of three operations, the bucket after each refund, and the headers', async () => {
    const ip = '10.1.0.1';
    const since = performance.now();
    let left = LIMIT;
    for (const op of operations()) {
      const res = await post(server, op.query, { ip, variables: op.variables });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.errors).toBeUndefined();
      const cost = res.body.extensions.cost as Cost;
      expect(cost).toMatchObject({
        requestedQueryCost: op.requested,
        actualQueryCost: op.actual,
        throttleStatus: { maximumAvailable: LIMIT, restoreRate: 1 },
      });
      // Charged the requested cost, given back what the result did not use.
      left -= op.actual;
      expectAvailable(cost, left, since);
      expect(res.headers.get('x-cost-limit')).toBe(String(LIMIT));
      expect(res.headers.get('x-cost-remaining')).toBe(String(cost.throttleStatus.currentlyAvailable));
    }
  });

  it('in a WebSocket `next`: the same three operations, the same costs', async () => {
    const socket = await Socket.open(server, '10.1.0.2');
    const since = performance.now();
    let left = LIMIT;
    try {
      for (const [i, op] of operations().entries()) {
        const message = await socket.run(`op${i}`, op.query, op.variables);
        expect(message.type, JSON.stringify(message)).toBe('next');
        const cost = message.payload.extensions.cost as Cost;
        expect(cost).toMatchObject({ requestedQueryCost: op.requested, actualQueryCost: op.actual, throttleStatus: { maximumAvailable: LIMIT, restoreRate: 1 } });
        left -= op.actual;
        expectAvailable(cost, left, since);
      }
    } finally {
      socket.close();
    }
  });

  it('a cached answer costs what its execution cost, not what it asks and not nothing', async () => {
    const ip = '10.1.0.3';
    const query = '{ everyone: users(limit: 50) { name posts(limit: 5) { title } } }'; // 50 × (1 + 5) = 300
    const since = performance.now();
    const hits = server.inkwell.responseCache!.stats.hits;
    const executed = await post(server, query, { ip });
    expect(executed.body.extensions.cost).toMatchObject({ requestedQueryCost: 300, actualQueryCost: 6 });
    expectAvailable(executed.body.extensions.cost, LIMIT - 6, since);
    const cached = await post(server, query, { ip });
    expect(server.inkwell.responseCache!.stats.hits).toBe(hits + 1);
    expect(cached.body.data).toEqual(executed.body.data);
    expect(cached.body.extensions.cost).toMatchObject({ requestedQueryCost: 300, actualQueryCost: 6 });
    expectAvailable(cached.body.extensions.cost, LIMIT - 12, since);
    expect(cached.headers.get('x-cost-remaining')).toBe(String(cached.body.extensions.cost.throttleStatus.currentlyAvailable));
  });

  it('a result with field errors carries it too; a refusal before the bucket does not', async () => {
    const ip = '10.1.0.4';
    // Anonymous: `email` of others is null, `me` is null; an out-of-range limit is a field error.
    const partial = await post(server, '{ me { id } users(limit: 0) { id } books(limit: 500) { id } }', { ip });
    expect(partial.status).toBe(200);
    expect(partial.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(partial.body.extensions.cost).toMatchObject({ requestedQueryCost: 101, actualQueryCost: 0 });
    const invalid = await post(server, '{ nope }', { ip });
    expect(invalid.status).toBe(400);
    expect(invalid.body.extensions).toBeUndefined();
    expect(invalid.headers.get('x-cost-remaining')).toBeNull();
  });

  it('browser apps may read the cost headers (CORS)', async () => {
    const res = await post(server, '{ users(limit: 1) { id } }', { ip: '10.1.0.5', headers: { origin: 'http://localhost:5173' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    const exposed = (res.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    expect(exposed).toEqual(expect.arrayContaining(['x-cost-limit', 'x-cost-remaining']));
  });
});

describe('buckets per caller', () => {
  it('a signed-in user has a bucket of its own, wherever it calls from; anonymous callers one per address, IPv6 per /64', async () => {
    const email = `cost-${Date.now()}@example.test`;
    const password = 'cost-bucket-password';
    const registered = await fetch(`${server.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.9.9.9' },
      body: JSON.stringify({ name: 'Cost Tester', email, password }),
    });
    expect(registered.status).toBe(201);
    const login = await fetch(`${server.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '10.9.9.9' },
      body: JSON.stringify({ email, password }),
    });
    const { accessToken } = (await login.json()) as { accessToken: string };
    const signedIn = { authorization: `Bearer ${accessToken}` };

    // Asks 300 and returns one object per author and per post: what it costs is in the answer.
    const query = '{ users(limit: 50) { id posts(limit: 5) { id } } }';
    const since = performance.now();
    const spend = async (ip: string, headers?: Record<string, string>) => {
      const res = await post(server, `${query} # ${ip} ${headers ? 'user' : ''}`, { ip, headers });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.extensions.cost as Cost;
    };
    const first = await spend('2001:db8:1:2::1');
    const actual = first.actualQueryCost!;
    expect(actual).toBeGreaterThan(0);
    expectAvailable(first, LIMIT - actual, since);
    // Another address of the same /64: the same bucket.
    expectAvailable(await spend('2001:db8:1:2::ffff'), LIMIT - 2 * actual, since);
    // The signed-in user, from that very address: a bucket of its own.
    expectAvailable(await spend('2001:db8:1:2::1', signedIn), LIMIT - actual, since);
    // Another /64: its own bucket.
    expectAvailable(await spend('2001:db8:1:3::1'), LIMIT - actual, since);
    // The user from elsewhere: still the user's bucket.
    expectAvailable(await spend('10.7.7.7', signedIn), LIMIT - 2 * actual, since);
  });
});

describe('subscriptions', () => {
  it('pay their requested cost when they start; each event carries what was charged', async () => {
    const ip = '10.1.0.6';
    const socket = await Socket.open(server, ip);
    try {
      const since = performance.now();
      const subscribers = server.inkwell.realtime.stats().subscribers;
      // 1 + 10 × 1 = 11.
      socket.send({ id: 's', type: 'subscribe', payload: { query: 'subscription { userCreated { id posts { id } } }' } });
      await eventually(() => server.inkwell.realtime.stats().subscribers === subscribers + 1, 'the subscriber');
      // The next operation of the same caller sees the 11 gone.
      const after = await post(server, 'query ($id: ID!) { user(id: $id) { name } }', { ip, variables: { id: authors[0]!.id } });
      expectAvailable(after.body.extensions.cost, LIMIT - 11 - 1, since);
      const [user] = await seed(server, [0]);
      const event = await socket.next((m) => m.id === 's' && m.type === 'next');
      expect(event.payload.data).toEqual({ userCreated: { id: user!.id, posts: [] } });
      const cost = event.payload.extensions.cost as Cost;
      expect(cost).toMatchObject({ requestedQueryCost: 11, actualQueryCost: 11, throttleStatus: { maximumAvailable: LIMIT, restoreRate: 1 } });
      expectAvailable(cost, LIMIT - 11, since);
    } finally {
      socket.close();
    }
  });
});
