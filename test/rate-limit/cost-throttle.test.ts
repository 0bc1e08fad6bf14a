import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.js';
import { parseScrape } from '../observability/prometheus.js';
import { eventually, post, seed, Socket, type Cost } from './helpers.js';

/**
 * docs/limits.md, "Cost": an operation the bucket cannot pay answers 429 RATE_LIMITED
 * with Retry-After (the seconds until the bucket holds its cost) and `extensions.cost`
 * with `actualQueryCost: null`, and runs once the bucket has refilled; one that asks
 * more than a whole bucket is refused for good (400 MAX_COMPLEXITY). A small bucket
 * (250) that refills fast (100 a second): recovery is polled for, never waited out.
 */

const LIMIT = 250;
const RATE = 100;
/** Asks 100 and returns 100 objects (100 posts exist): costs all it asks. */
const HUNDRED = '{ posts(limit: 100) { id } }';

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ COST_LIMIT: String(LIMIT), COST_RESTORE_PER_S: String(RATE), TRUST_PROXY: 'true' });
  await seed(server, [100]);
});
afterAll(async () => {
  await server?.close();
});

async function metric(name: string, labels: Record<string, string>): Promise<number> {
  const res = await fetch(`${server.url}/metrics`);
  return parseScrape(await res.text()).value(name, labels);
}

describe('over the bucket', () => {
  it('HTTP: 429 with Retry-After and extensions.cost (actualQueryCost null); the caller runs again once the bucket holds the cost', async () => {
    const ip = '10.2.0.1';
    const refusalsBefore = await metric('inkwell_cost_refusals_total', { transport: 'http', reason: 'bucket' });
    let refused: Awaited<ReturnType<typeof post>> | undefined;
    const passed: Cost[] = [];
    // Each operation takes 100 of 250 while at most a few points a request come back:
    // the third or a later one finds too little.
    for (let i = 0; i < 50 && !refused; i++) {
      const res = await post(server, HUNDRED, { ip });
      if (res.status === 429) refused = res;
      else {
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.data.posts).toHaveLength(100);
        passed.push(res.body.extensions.cost);
      }
    }
    expect(refused, 'a request refused for its cost').toBeDefined();
    expect(passed.length).toBeGreaterThanOrEqual(2);
    for (const cost of passed) expect(cost).toMatchObject({ requestedQueryCost: 100, actualQueryCost: 100 });

    const { body, headers } = refused!;
    expect(body.data).toBeUndefined();
    expect(body.error).toBe('Too many requests');
    expect(body.errors.map((e: any) => e.extensions.code)).toEqual(['RATE_LIMITED']);
    const cost = body.extensions.cost as Cost;
    expect(cost).toMatchObject({ requestedQueryCost: 100, actualQueryCost: null, throttleStatus: { maximumAvailable: LIMIT, restoreRate: RATE } });
    const available = cost.throttleStatus.currentlyAvailable;
    expect(available).toBeLessThan(100);
    // The seconds until the bucket holds 100 again, rounded up (the reading is rounded down, so one less at most).
    const retryAfter = Number(headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, Math.ceil((100 - available - 1) / RATE)));
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((100 - available) / RATE));
    expect(headers.get('x-cost-limit')).toBe(String(LIMIT));
    expect(headers.get('x-cost-remaining')).toBe(String(available));
    expect(await metric('inkwell_cost_refusals_total', { transport: 'http', reason: 'bucket' })).toBe(refusalsBefore + 1);
    expect(await metric('inkwell_rate_limited_total', { transport: 'http', route: '/graphql' })).toBeGreaterThanOrEqual(1);

    // Recovery: polled, the same operation runs again and is charged as before.
    let recovered: Awaited<ReturnType<typeof post>> | undefined;
    await eventually(async () => {
      const res = await post(server, HUNDRED, { ip });
      if (res.status === 200) recovered = res;
      else expect(res.status).toBe(429);
      return res.status === 200;
    }, 'the bucket to refill');
    expect(recovered!.body.extensions.cost).toMatchObject({ requestedQueryCost: 100, actualQueryCost: 100 });
    expect(recovered!.body.data.posts).toHaveLength(100);
  });

  it('WebSocket: an `error` message with RATE_LIMITED and extensions.cost; the socket stays open and runs it once refilled', async () => {
    const socket = await Socket.open(server, '10.2.0.2');
    try {
      let refusal: any;
      for (let i = 0; i < 50 && !refusal; i++) {
        const message = await socket.run(`q${i}`, HUNDRED);
        if (message.type === 'error') refusal = message;
        else expect(message.payload.extensions.cost).toMatchObject({ requestedQueryCost: 100, actualQueryCost: 100 });
      }
      expect(refusal, 'an operation refused for its cost').toBeDefined();
      expect(refusal.payload).toHaveLength(1);
      expect(refusal.payload[0].extensions.code).toBe('RATE_LIMITED');
      expect(refusal.payload[0].extensions.cost).toMatchObject({ requestedQueryCost: 100, actualQueryCost: null, throttleStatus: { maximumAvailable: LIMIT } });
      expect(socket.open).toBe(true);
      let n = 0;
      await eventually(async () => (await socket.run(`again${++n}`, HUNDRED)).type === 'next', 'the bucket to refill');
    } finally {
      socket.close();
    }
  });

  it('a refused operation is not charged: the bucket it finds afterwards only grew', async () => {
    const ip = '10.2.0.3';
    let last: Cost | undefined;
    for (let i = 0; i < 50; i++) {
      const res = await post(server, HUNDRED, { ip });
      last = res.body.extensions.cost;
      if (res.status === 429) break;
    }
    expect(last!.actualQueryCost).toBeNull();
    // Asks 1: always payable here. Had the refusal taken its 100, the bucket would be below 0.
    const probe = await post(server, '{ posts(limit: 1) { id } }', { ip });
    expect(probe.status).toBe(200);
    expect(probe.body.extensions.cost.throttleStatus.currentlyAvailable).toBeGreaterThanOrEqual(last!.throttleStatus.currentlyAvailable - 1);
  });
});

describe('more than a whole bucket', () => {
  it('is refused for good: 400 MAX_COMPLEXITY with extensions.cost and no Retry-After', async () => {
    const res = await post(server, '{ posts(limit: 100) { id author { name } reactions(limit: 1) { id } } }', { ip: '10.2.0.4' }); // 100 × 3 = 300 > 250
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: any) => e.extensions.code)).toEqual(['MAX_COMPLEXITY']);
    expect(res.body.extensions.cost).toMatchObject({ requestedQueryCost: 300, actualQueryCost: null, throttleStatus: { maximumAvailable: LIMIT } });
    expect(res.headers.get('retry-after')).toBeNull();
    expect(await metric('inkwell_cost_refusals_total', { transport: 'http', reason: 'limit' })).toBe(1);
    // Nothing was taken: the same caller's next operation finds a full bucket.
    const next = await post(server, '{ posts(limit: 1) { id } }', { ip: '10.2.0.4' });
    expect(next.body.extensions.cost.throttleStatus.currentlyAvailable).toBe(LIMIT - 1);
  });

  it('at the defaults the complexity limit (1,000, below the bucket of 10,000) refuses it first', async () => {
    const defaults = await startServer({ COST_LIMIT: '10000', COST_RESTORE_PER_S: '200' });
    try {
      const res = await defaults.gql('{ users(limit: 100) { posts(limit: 10) { author { name } } } }'); // 2,100
      expect(res.status).toBe(400);
      expect(res.body.errors?.map((e) => e.extensions?.code)).toEqual(['MAX_COMPLEXITY']);
      expect((res.body as { extensions?: unknown }).extensions).toBeUndefined();
      const ok = await defaults.gql('{ users { id } }');
      expect((ok.body as any).extensions.cost).toMatchObject({ requestedQueryCost: 20, throttleStatus: { maximumAvailable: 10_000, restoreRate: 200 } });
      expect(ok.headers.get('x-cost-limit')).toBe('10000');
    } finally {
      await defaults.close();
    }
  });
});

describe('over the request count', () => {
  it('a request refused by its count (429) is not charged, though its known document is counted beside its charge', async () => {
    // A bucket that holds many operations, refilled slowly (1 a second): a charge that
    // was not given back shows as 100 points missing, however long the wait.
    const counted = await startServer({ COST_LIMIT: '1000', COST_RESTORE_PER_S: '1', RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '1000', TRUST_PROXY: 'true' });
    try {
      await seed(counted, [100]);
      const ip = '10.2.0.5';
      // Windows are fixed: on a loaded machine the requests may straddle a boundary.
      let before: Cost | undefined;
      let limited: Awaited<ReturnType<typeof post>> | undefined;
      for (let i = 0; i < 20 && !limited; i++) {
        const res = await post(counted, HUNDRED, { ip });
        if (res.status === 429) limited = res;
        else before = res.body.extensions.cost;
      }
      expect(limited!.body.errors.map((e: any) => e.extensions.code)).toEqual(['RATE_LIMITED']);
      expect(limited!.body.extensions?.cost).toBeUndefined();
      expect(limited!.headers.get('x-cost-remaining')).toBeNull();
      await sleep(Number(limited!.headers.get('retry-after')) * 1000 + 50);
      const probe = await post(counted, '{ posts(limit: 1) { id } }', { ip });
      expect(probe.status).toBe(200);
      // What the last answered request left, less the probe's 1 (the refill only adds).
      expect(probe.body.extensions.cost.throttleStatus.currentlyAvailable).toBeGreaterThanOrEqual(before!.throttleStatus.currentlyAvailable - 1);
    } finally {
      await counted.close();
    }
  });
});
