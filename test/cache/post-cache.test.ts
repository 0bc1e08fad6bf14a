import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * docs/schema.md ("Caching"): `post(id)` may be served from a key-value cache (in memory here) for
 * up to 300 s. These are the read-side facts, anonymously: a repeated lookup costs no SQL,
 * entries live at most 300 s, and visibility is checked per caller even on a hit.
 * Freshness after writes over the wire is in post-cache-writes.test.ts.
 */
let server: TestServer;
let welcome: { id: string };
let draft: { id: string };

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  const db = server.inkwell.backends.db.kysely;
  welcome = await db.selectFrom('posts').select('id').where('title', '=', 'Welcome to Inkwell').executeTakeFirstOrThrow();
  draft = await db.selectFrom('posts').select('id').where('published', '=', 0).executeTakeFirstOrThrow();
});
afterAll(() => server.close());
afterEach(() => vi.restoreAllMocks());

async function counted(query: string, variables?: Record<string, unknown>) {
  const before = server.inkwell.backends.db.queryCount;
  const res = await server.gql(query, variables);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return { data: res.body.data as any, statements: server.inkwell.backends.db.queryCount - before };
}

const lookup = 'query ($id: ID!) { post(id: $id) { id title likes published } }';

describe('post(id) cache', () => {
  it('serves a repeated lookup, like count included, without SQL', async () => {
    const first = await counted(lookup, { id: welcome.id });
    expect(first.statements).toBe(1); // the post with its like count, one statement
    expect(first.data.post).toMatchObject({ id: welcome.id, title: 'Welcome to Inkwell', likes: 3, published: true });
    const second = await counted(lookup, { id: welcome.id });
    expect(second.statements).toBe(0);
    expect(second.data).toEqual(first.data);
  });

  it('stores entries for at most 300 s', async () => {
    const kv = server.inkwell.backends.kv;
    const set = vi.spyOn(kv, 'set');
    const other = await server.inkwell.backends.db.kysely.selectFrom('posts').select('id').where('title', '=', 'House rules').executeTakeFirstOrThrow();
    await counted(lookup, { id: other.id });
    const entryWrites = set.mock.calls.filter(([key]) => key.includes(other.id) && !key.includes('version'));
    expect(entryWrites.length).toBe(1);
    expect(entryWrites[0]![2]).toBeGreaterThan(0);
    expect(entryWrites[0]![2]).toBeLessThanOrEqual(300_000);
  });

  it('reads the database again before an answer could be older than 300 s', async (ctx) => {
    // Time travel works on the in-memory store only; Redis keeps its own clock (its TTL is checked above).
    if (!(server.inkwell.backends.kv instanceof MemoryStore)) return ctx.skip();
    const other = await server.inkwell.backends.db.kysely.selectFrom('posts').select('id').where('title', '=', 'Poetry in orbit').executeTakeFirstOrThrow();
    expect((await counted(lookup, { id: other.id })).statements).toBe(1);
    // The in-memory store and the response cache measure age with performance.now(); move it forward.
    // An entry lives 150 s, and a whole answer built from it at most another 150 s (src/cache/entity-cache.ts).
    const now = performance.now.bind(performance);
    let offset = 149_000;
    vi.spyOn(performance, 'now').mockImplementation(() => now() + offset);
    await new Promise((r) => setTimeout(r, 5)); // past the store's 1 ms clock debounce
    expect((await counted(lookup, { id: other.id })).statements).toBe(0);
    offset = 301_000;
    await new Promise((r) => setTimeout(r, 5));
    const expired = await counted(lookup, { id: other.id });
    expect(expired.statements).toBe(1);
    expect(expired.data.post.id).toBe(other.id);
  });

  it('checks visibility on every hit: an unpublished post stays hidden from anonymous callers', async () => {
    expect((await counted(lookup, { id: draft.id })).data.post).toBeNull();
    const again = await counted(lookup, { id: draft.id });
    expect(again.data.post).toBeNull();
    expect(again.statements).toBe(0); // served from the cache, still filtered
  });

  it('does not cache unknown ids', async () => {
    const set = vi.spyOn(server.inkwell.backends.kv, 'set');
    expect((await counted(lookup, { id: 'does-not-exist' })).data.post).toBeNull();
    expect(set).not.toHaveBeenCalled();
  });
});
