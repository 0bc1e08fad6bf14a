import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostRow } from '../../../src/db/schema.js';
import { parseScrape } from '../../observability/prometheus.js';
import { userRows } from '../../helpers/rows.js';
import { startServer, type TestServer } from '../../helpers/server.js';

/**
 * docs/limits.md, "Heavy operations": the line is bounded. Beyond QUERY_HEAVY_QUEUE
 * waiting, or past QUERY_HEAVY_WAIT_MS, a heavy operation answers 503 OVERLOADED with
 * Retry-After at once; one whose client has gone leaves the line and never executes.
 */
const USERS = 80;
const POSTS_EACH = 20;
// 80 users + 80 × 3 posts: cost 320, heavy at QUERY_HEAVY_COST=100.
const HEAVY = '{ users(limit: 80) { id name posts(limit: 3) { title content } } }';
// 80 × 20 posts of 4 KB (6.4 MB to serialise): long enough that the line fills behind it.
const SLOW = `{ users(limit: 80) { id posts(limit: ${POSTS_EACH}) { content } } }`;
const SERVER_ENV = { QUERY_HEAVY_COST: '100', QUERY_HEAVY_CONCURRENCY: '1', QUERY_MAX_COMPLEXITY: '100000', RESPONSE_CACHE_MB: '0' };

async function seed(server: TestServer): Promise<void> {
  const db = server.inkwell.backends.db.kysely;
  const at = (n: number) => new Date(Date.parse('2024-06-01T00:00:00.000Z') + n * 1000).toISOString();
  const users = userRows(USERS, at);
  const posts: PostRow[] = users.flatMap((u, i) =>
    Array.from({ length: POSTS_EACH }, (_, k) => ({
      id: `p-${i}-${k}`,
      author_id: u.id,
      title: `Post ${k} by ${u.name}`,
      content: 'x'.repeat(4_000),
      published: 1,
      tags: null,
      created_at: at(1000 + i * POSTS_EACH + k),
      updated_at: at(1000 + i * POSTS_EACH + k),
    })),
  );
  await db.insertInto('users').values(users).execute();
  for (let i = 0; i < posts.length; i += 200) await db.insertInto('posts').values(posts.slice(i, i + 200)).execute();
}

async function graphql(server: TestServer, query: string) {
  const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as any };
}

async function lineMetrics(server: TestServer) {
  const scrape = parseScrape(await (await fetch(`${server.url}/metrics`)).text());
  return {
    executed: scrape.value('inkwell_graphql_heavy_executions_total'),
    waiting: scrape.value('inkwell_graphql_heavy_operations', { state: 'waiting' }),
    running: scrape.value('inkwell_graphql_heavy_operations', { state: 'running' }),
    full: scrape.value('inkwell_graphql_heavy_refusals_total', { reason: 'full' }),
    timeout: scrape.value('inkwell_graphql_heavy_refusals_total', { reason: 'timeout' }),
    gone: scrape.value('inkwell_graphql_heavy_refusals_total', { reason: 'gone' }),
  };
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * `count` raw connections, each with one POST of `query` written at the same moment (so
 * the server reads them in one go); nothing is read back unless the caller listens.
 */
async function sendRaw(server: TestServer, query: string, count: number): Promise<Socket[]> {
  const { port } = new URL(server.url);
  const sockets = Array.from({ length: count }, () => connect(Number(port), '127.0.0.1').on('error', () => {}));
  await Promise.all(sockets.map((socket) => once(socket, 'connect')));
  const body = JSON.stringify({ query });
  const request = `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  for (const socket of sockets) socket.write(request);
  return sockets;
}

describe('the heavy line, bounded in length', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ...SERVER_ENV, QUERY_HEAVY_QUEUE: '3' });
    await seed(server);
  });
  afterAll(async () => server?.close());

  it('answers 503 OVERLOADED with Retry-After beyond QUERY_HEAVY_QUEUE waiting; the others are served in full', async () => {
    const before = await lineMetrics(server);
    const responses = await Promise.all(Array.from({ length: 30 }, () => graphql(server, HEAVY)));
    const served = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status !== 200);
    expect(served.length).toBeGreaterThanOrEqual(4);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of served) expect(r.body.data.users).toHaveLength(USERS);
    for (const r of refused) {
      expect(r.status).toBe(503);
      expect(r.body.errors[0].extensions.code).toBe('OVERLOADED');
      expect(r.body.data).toBeUndefined();
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    const after = await lineMetrics(server);
    expect(after.full - before.full).toBe(refused.length);
    expect(after.executed - before.executed).toBe(served.length);
    expect([after.running, after.waiting]).toEqual([0, 0]);
    // Light operations never wait in the line, full or not.
    expect((await graphql(server, '{ posts(limit: 2) { id } }')).status).toBe(200);
  });

  it('drops the operations whose clients have gone: they never execute', async () => {
    const before = await lineMetrics(server);
    // Four at once: one runs, the others wait behind it; then three clients go.
    const [kept, ...leaving] = await sendRaw(server, SLOW, 4);
    let keptAnswer = '';
    kept!.on('data', (chunk: Buffer) => (keptAnswer += chunk.toString('latin1')));
    await until(async () => (await lineMetrics(server)).waiting >= 1, 'heavy operations waiting');
    for (const socket of leaving) socket.destroy();
    await until(async () => {
      const m = await lineMetrics(server);
      return m.running === 0 && m.waiting === 0;
    }, 'the line to empty');
    const after = await lineMetrics(server);
    const gone = after.gone - before.gone;
    const executed = after.executed - before.executed;
    // Those still waiting when their clients left were dropped, never executed.
    expect(gone).toBeGreaterThanOrEqual(1);
    expect(executed).toBeLessThanOrEqual(4 - gone);
    await until(async () => keptAnswer.includes('"users"'), "the kept client's answer");
    expect(keptAnswer.startsWith('HTTP/1.1 200')).toBe(true);
    kept!.destroy();
  });
});

describe('the heavy line, bounded in wait', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ ...SERVER_ENV, QUERY_HEAVY_WAIT_MS: '1' });
    await seed(server);
  });
  afterAll(async () => server?.close());

  it('answers 503 OVERLOADED to an operation that waited longer than QUERY_HEAVY_WAIT_MS', async () => {
    const before = await lineMetrics(server);
    const responses = await Promise.all(Array.from({ length: 10 }, () => graphql(server, HEAVY)));
    const refused = responses.filter((r) => r.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) {
      expect(r.body.errors[0].extensions.code).toBe('OVERLOADED');
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    for (const r of responses.filter((x) => x.status !== 503)) expect(r.body.data.users).toHaveLength(USERS);
    const after = await lineMetrics(server);
    expect(after.timeout - before.timeout).toBe(refused.length);
  });
});
