import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostRow } from '../../../src/db/schema.js';
import { parseScrape } from '../../observability/prometheus.js';
import { userRows } from '../../helpers/rows.js';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * docs/limits.md, "heavy operations": an operation costing at least QUERY_HEAVY_COST
 * waits for its turn (QUERY_HEAVY_CONCURRENCY at once); cheaper ones never wait, and
 * every answer is the one it would have been.
 */
let server: TestServer;
const USERS = 60;

beforeAll(async () => {
  server = await startServer({ QUERY_HEAVY_COST: '100', QUERY_HEAVY_CONCURRENCY: '1', RESPONSE_CACHE_MB: '0' });
  const db = server.inkwell.backends.db.kysely;
  const at = (n: number) => new Date(Date.parse('2024-06-01T00:00:00.000Z') + n * 1000).toISOString();
  const users = userRows(USERS, at);
  const posts: PostRow[] = users.map((u, i) => ({
    id: `p-${i}`,
    author_id: u.id,
    title: `Post by ${u.name}`,
    content: null,
    published: 1,
    tags: null,
    created_at: at(1000 + i),
    updated_at: at(1000 + i),
  }));
  await db.insertInto('users').values(users).execute();
  await db.insertInto('posts').values(posts).execute();
});

afterAll(async () => {
  await server?.close();
});

async function graphql(query: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  return { status: response.status, body: await response.json() };
}

async function heavyMetrics() {
  const scrape = parseScrape(await (await fetch(`${server.url}/metrics`)).text());
  return {
    waits: scrape.value('inkwell_graphql_heavy_waits_total'),
    running: scrape.value('inkwell_graphql_heavy_operations', { state: 'running' }),
    waiting: scrape.value('inkwell_graphql_heavy_operations', { state: 'waiting' }),
  };
}

// Costs (the most objects an operation can return, docs/limits.md): 60 users + 60 posts = 120,
// heavy here; five posts + five authors = 10, light.
const HEAVY = '{ users(limit: 60) { id posts(limit: 1) { title } } }';
const LIGHT = '{ posts(limit: 5) { id author { name } } }';

describe('heavy operations', () => {
  it('take turns and answer as usual; light ones never wait', async () => {
    const before = await heavyMetrics();
    const light = await Promise.all(Array.from({ length: 20 }, () => graphql(LIGHT)));
    expect(light.every((r) => r.status === 200 && r.body.data.posts.length === 5)).toBe(true);
    expect((await heavyMetrics()).waits).toBe(before.waits);

    // Twenty at once: each spans several event-loop turns (its statements are shared
    // across requests, src/db/shared-batch.ts), so with one turn at a time some wait.
    const [alone] = await Promise.all([graphql(HEAVY)]);
    const heavy = await Promise.all(Array.from({ length: 20 }, () => graphql(HEAVY)));
    expect(alone.status).toBe(200);
    expect(alone.body.data.users).toHaveLength(USERS);
    for (const response of heavy) expect({ ...response, body: withoutCost(response.body) }).toEqual({ ...alone, body: withoutCost(alone.body) });
    const after = await heavyMetrics();
    expect(after.waits).toBeGreaterThan(before.waits);
    expect(after.waits - before.waits).toBeLessThanOrEqual(20);
    expect([after.running, after.waiting]).toEqual([0, 0]);
  });

  it('an operation refused for its cost never takes a turn', async () => {
    const before = await heavyMetrics();
    const refused = await graphql('{ users(limit: 100) { posts(limit: 100) { id } } }');
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions.code).toBe('MAX_COMPLEXITY');
    expect(await heavyMetrics()).toEqual(before);
  });
});
