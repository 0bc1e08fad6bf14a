import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json, login, register, uniqueEmail } from '../auth/helpers.js';
import { collect, subscribersReady, waitFor, wsClient } from '../graphql/ws/helpers.js';
import { startServer, testBackend, wsUrl, type TestServer } from '../helpers/server.js';
import { parseScrape, type Scrape } from './prometheus.js';

// GET /metrics over the wire: Prometheus text, the counters moving with the traffic
// that made them, gauges of live state, and who may read it outside development.

const TOKEN = 'metrics-token-for-the-tests-0123456789';

async function scrape(server: TestServer, headers: Record<string, string> = {}): Promise<Scrape> {
  const response = await fetch(`${server.url}/metrics`, { headers });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseScrape(await response.text());
}

const query = (server: TestServer, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/graphql`, json(body, headers));

const duration = (labels: Record<string, string>) => ['inkwell_request_duration_seconds_count', labels] as const;

describe('metrics in development', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startServer();
  });

  afterAll(async () => {
    await server?.close();
  });

  it('are open, in Prometheus text, with every family', async () => {
    const metrics = await scrape(server);
    expect(Object.fromEntries(metrics.types)).toMatchObject({
      inkwell_request_duration_seconds: 'histogram',
      inkwell_graphql_errors_total: 'counter',
      inkwell_response_cache_requests_total: 'counter',
      inkwell_rate_limited_total: 'counter',
      inkwell_websocket_connections: 'gauge',
      inkwell_websocket_subscriptions: 'gauge',
      inkwell_db_pool_max: 'gauge',
      inkwell_db_pool_connections: 'gauge',
      inkwell_db_pool_waiting: 'gauge',
      inkwell_graphql_heavy_operations: 'gauge',
      inkwell_graphql_heavy_waits_total: 'counter',
      nodejs_eventloop_lag_seconds: 'gauge',
      nodejs_eventloop_lag_p99_seconds: 'gauge',
    });
    // PostgreSQL: a pool for reads and one for writes, DATABASE_POOL_SIZE (5 here) each; SQLite: its one connection.
    const pools = testBackend === 'postgres' ? ['reads', 'writes'] : ['shared'];
    for (const pool of pools) expect(metrics.value('inkwell_db_pool_max', { pool })).toBe(testBackend === 'postgres' ? 5 : 1);
    expect(metrics.samples.filter((s) => s.name === 'inkwell_db_pool_max').map((s) => s.labels.pool).sort()).toEqual(pools);
  });

  it('count requests by transport, route, operation type and status; errors by code; cache hits and misses', async () => {
    const email = uniqueEmail('metrics');
    await register(server.url, email);
    const { accessToken } = await login(server.url, email);
    const before = await scrape(server);

    const me = { query: 'query Me { me { id } }' };
    expect((await query(server, me, { authorization: `Bearer ${accessToken}` })).status).toBe(200);
    expect((await query(server, me, { authorization: `Bearer ${accessToken}` })).status).toBe(200);
    // Anonymous: the second is a cache hit, and counts too.
    const users = { query: '{ users(limit: 1) { id } }' };
    expect((await query(server, users)).status).toBe(200);
    expect((await query(server, users)).status).toBe(200);
    expect((await query(server, { query: 'mutation { nope }' })).status).toBe(400);
    expect((await fetch(`${server.url}/graphql`, { method: 'PUT' })).status).toBe(405);

    const after = await scrape(server);
    const delta = (name: string, labels?: Record<string, string>) => after.value(name, labels) - before.value(name, labels);
    expect(delta(...duration({ transport: 'http', route: '/graphql', operation_type: 'query', status: '200' }))).toBe(4);
    expect(delta(...duration({ transport: 'http', route: '/graphql', operation_type: 'none', status: '400' }))).toBe(1);
    expect(delta(...duration({ transport: 'http', route: '/graphql', operation_type: 'none', status: '405' }))).toBe(1);
    expect(delta('inkwell_response_cache_requests_total', { outcome: 'miss' })).toBe(2);
    expect(delta('inkwell_response_cache_requests_total', { outcome: 'hit' })).toBe(2);
    expect(delta('inkwell_graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
    expect(delta('inkwell_graphql_errors_total', { code: 'METHOD_NOT_ALLOWED' })).toBe(1);
    // The histogram's buckets are cumulative and end at +Inf = count.
    const labels = { transport: 'http', route: '/graphql', operation_type: 'query', status: '200' };
    const buckets = after.samples.filter((s) => s.name === 'inkwell_request_duration_seconds_bucket' && s.labels['operation_type'] === 'query' && s.labels['status'] === '200' && s.labels['transport'] === 'http');
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b));
    expect(buckets.at(-1)).toMatchObject({ labels: { ...labels, le: '+Inf' }, value: after.value('inkwell_request_duration_seconds_count', labels) });
  });

  it('show WebSocket connections and subscriptions, and time operations over WebSocket', async () => {
    const before = await scrape(server);
    const client = wsClient(wsUrl(server));
    try {
      const subscription = collect(client, { query: 'subscription { userCreated { id } }' });
      await subscribersReady(server.inkwell.realtime, 1);
      const result = collect(client, { query: 'query OverWs { users(limit: 1) { id } }' });
      await waitFor(() => result.completed, 5_000, 'the query over WebSocket');
      const refused = collect(client, { query: '{ nope }' });
      await waitFor(() => refused.errors.length > 0, 5_000, 'the refusal');

      const during = await scrape(server);
      expect(during.value('inkwell_websocket_connections')).toBe(1);
      expect(during.value('inkwell_websocket_subscriptions')).toBe(1);
      const delta = (name: string, labels?: Record<string, string>) => during.value(name, labels) - before.value(name, labels);
      expect(delta(...duration({ transport: 'ws', route: '/graphql', operation_type: 'query', status: '200' }))).toBe(1);
      expect(delta(...duration({ transport: 'ws', route: '/graphql', operation_type: 'subscription', status: '200' }))).toBe(1);
      expect(delta(...duration({ transport: 'ws', route: '/graphql', operation_type: 'none', status: '400' }))).toBe(1);
      expect(delta('inkwell_graphql_errors_total', { code: 'GRAPHQL_VALIDATION_FAILED' })).toBe(1);
      subscription.stop();
    } finally {
      await client.dispose();
    }
    await waitFor(() => server.inkwell.realtime.stats().connections === 0, 5_000, 'the socket to close');
    const after = await scrape(server);
    expect(after.value('inkwell_websocket_connections')).toBe(0);
    expect(after.value('inkwell_websocket_subscriptions')).toBe(0);
  });

  it('show the database pool in use', async () => {
    const metrics = await scrape(server);
    // Reads ran on every backend (PostgreSQL keeps the connections it opened).
    const pool = testBackend === 'postgres' ? 'reads' : 'shared';
    const inUse = metrics.value('inkwell_db_pool_connections', { pool, state: 'in_use' });
    const idle = metrics.value('inkwell_db_pool_connections', { pool, state: 'idle' });
    // Nothing runs between requests.
    expect(inUse).toBe(0);
    expect(idle).toBeGreaterThanOrEqual(1);
    expect(inUse + idle).toBeLessThanOrEqual(metrics.value('inkwell_db_pool_max', { pool }));
    expect(metrics.value('inkwell_db_pool_waiting', { pool })).toBe(0);
  });

  it('belong to one app: another app in the same process counts its own', async () => {
    const other = await startServer();
    try {
      const before = await scrape(server);
      expect((await query(other, { query: '{ users(limit: 2) { id } }' })).status).toBe(200);
      const labels = { transport: 'http', route: '/graphql', operation_type: 'query', status: '200' };
      expect((await scrape(other)).value('inkwell_request_duration_seconds_count', labels)).toBe(1);
      expect((await scrape(server)).value('inkwell_request_duration_seconds_count', labels)).toBe(before.value('inkwell_request_duration_seconds_count', labels));
    } finally {
      await other.close();
    }
  });
});

describe('rate-limit refusals', () => {
  it('are counted over HTTP and WebSocket, with RATE_LIMITED errors', async () => {
    const server = await startServer({ RATE_LIMIT_MAX: '2' });
    const client = wsClient(wsUrl(server));
    try {
      const body = { query: '{ users(limit: 1) { id } }' };
      expect((await query(server, body)).status).toBe(200);
      expect((await query(server, body)).status).toBe(200);
      expect((await query(server, body)).status).toBe(429);
      const overWs = collect(client, body);
      await waitFor(() => overWs.errors.length > 0, 5_000, 'the refusal over WebSocket');
      const metrics = await scrape(server);
      expect(metrics.value('inkwell_rate_limited_total', { transport: 'http', route: '/graphql' })).toBe(1);
      expect(metrics.value('inkwell_rate_limited_total', { transport: 'ws', route: '/graphql' })).toBe(1);
      expect(metrics.value('inkwell_graphql_errors_total', { code: 'RATE_LIMITED' })).toBe(2);
      expect(metrics.value(...duration({ transport: 'http', route: '/graphql', operation_type: 'none', status: '429' }))).toBe(1);
    } finally {
      await client.dispose();
      await server.close();
    }
  });
});

describe('metrics outside development', () => {
  it('do not exist without METRICS_TOKEN: 404, as an unknown path', async () => {
    const server = await startServer({ NODE_ENV: 'test' });
    try {
      const metrics = await fetch(`${server.url}/metrics`);
      const unknown = await fetch(`${server.url}/no-such-path`);
      expect(metrics.status).toBe(404);
      expect(await metrics.text()).toBe((await unknown.text()).replace('/no-such-path', '/metrics'));
    } finally {
      await server.close();
    }
  });

  it.each(['test', 'production'])('need the bearer token (NODE_ENV=%s)', async (env) => {
    const server = await startServer({ NODE_ENV: env, METRICS_TOKEN: TOKEN, BCRYPT_COST: '10' });
    try {
      for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, TOKEN, 'Bearer ']) {
        const response = await fetch(`${server.url}/metrics`, { headers: authorization === undefined ? {} : { authorization } });
        expect(response.status, String(authorization)).toBe(401);
        expect(response.headers.get('www-authenticate')).toBe('Bearer');
        expect(await response.text()).not.toContain('inkwell_');
      }
      const metrics = await scrape(server, { authorization: `Bearer ${TOKEN}` });
      expect(metrics.types.get('inkwell_request_duration_seconds')).toBe('histogram');
    } finally {
      await server.close();
    }
  });
});
