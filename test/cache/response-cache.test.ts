import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBackends } from '../../src/backends.js';
import { signIn, type SignedIn } from '../helpers/auth.js';
import { startServer, type TestServer, withoutCost } from '../helpers/server.js';

/**
 * The whole-response cache (src/graphql/response-cache.ts) serves a repeated query
 * without running it, and must never serve anything a fresh execution would not:
 * not after a write through the API, not after a write by another process or
 * instance, and never one caller's view to another.
 */
let server: TestServer;
let admin: SignedIn;
let alice: SignedIn;
let bob: SignedIn;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  [admin, alice, bob] = await Promise.all([
    signIn(server, 'admin@inkwell.test'),
    signIn(server, 'alice@inkwell.test'),
    signIn(server, 'bob@inkwell.test'),
  ]);
});
afterAll(() => server.close());

async function counted(query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) {
  const before = server.inkwell.backends.db.queryCount;
  const res = await server.gql(query, variables, { headers });
  expect(res.status).toBe(200);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return { data: res.body.data as any, statements: server.inkwell.backends.db.queryCount - before };
}

const books = '{ books(limit: 100) { id title author } }';

describe('response cache', () => {
  it('serves a repeated query without running it', async () => {
    const first = await counted(books);
    expect(first.statements).toBeGreaterThan(0);
    const second = await counted(books);
    expect(second.statements).toBe(0);
    expect(second.data).toEqual(first.data);
  });

  it('a different variable value or operation is not a hit', async () => {
    const q = 'query ($limit: Int) { books(limit: $limit) { id } }';
    const two = await counted(q, { limit: 2 });
    const three = await counted(q, { limit: 3 });
    expect(two.data.books).toHaveLength(2);
    expect(three.data.books).toHaveLength(3);
    expect(three.statements).toBeGreaterThan(0);
  });

  it('is never stale after a mutation through the API', async () => {
    await counted(books);
    const added = await server.gql('mutation { addBook(title: "Fresh", author: "Someone") { id } }', undefined, { headers: admin.headers });
    expect(added.body.errors).toBeUndefined();
    const after = await counted(books);
    expect(after.statements).toBeGreaterThan(0);
    expect(after.data.books.map((b: { title: string }) => b.title)).toContain('Fresh');
  });

  it('is never stale after a write by another process or instance on the same database', async () => {
    const query = '{ users(limit: 100) { id name } }';
    const before = await counted(query);
    const target = before.data.users[0];
    // A second connection: another process on the SQLite file, or another instance on
    // PostgreSQL and Redis — the way the `user:role` script and a second instance write.
    const other = createBackends(server.inkwell.config);
    await other.ready();
    try {
      await other.db.kysely.updateTable('users').set({ name: 'Renamed Elsewhere' }).where('id', '=', target.id).execute();
    } finally {
      await other.close();
    }
    const after = await counted(query);
    expect(after.data.users.find((u: { id: string }) => u.id === target.id).name).toBe('Renamed Elsewhere');
  });

  it("never serves one caller's view to another", async () => {
    const me = '{ me { id email } users(limit: 100) { id email } }';
    const asAlice = await counted(me, undefined, alice.headers);
    const asBob = await counted(me, undefined, bob.headers);
    const anonymous = await counted(me);
    const asAdmin = await counted(me, undefined, admin.headers);
    expect(asAlice.data.me.id).toBe(alice.user.id);
    expect(asBob.data.me.id).toBe(bob.user.id);
    expect(anonymous.data.me).toBeNull();
    // Emails: each sees only their own, the admin sees all, the anonymous caller none.
    const emails = (data: any) => data.users.filter((u: { email: string | null }) => u.email !== null).map((u: { id: string }) => u.id);
    expect(emails(asAlice.data)).toEqual([alice.user.id]);
    expect(emails(asBob.data)).toEqual([bob.user.id]);
    expect(emails(anonymous.data)).toEqual([]);
    expect(emails(asAdmin.data).length).toBe(asAdmin.data.users.length);
    // Repeats are hits, and still per caller.
    const again = await counted(me, undefined, bob.headers);
    expect(again.statements).toBeLessThan(asBob.statements);
    expect(again.data).toEqual(asBob.data);
  });

  it('a role change takes effect on the next request', async () => {
    const drafts = '{ posts(limit: 100) { id published } }';
    const asUser = await counted(drafts, undefined, bob.headers);
    expect(asUser.data.posts.every((p: { published: boolean }) => p.published)).toBe(true);
    const promoted = await server.gql(
      'mutation ($id: ID!) { updateUser(id: $id, role: "editor") { role } }',
      { id: bob.user.id },
      { headers: admin.headers },
    );
    expect(promoted.body.errors).toBeUndefined();
    const asEditor = await counted(drafts, undefined, bob.headers);
    expect(asEditor.data.posts.some((p: { published: boolean }) => !p.published)).toBe(true);
  });

  it('does not keep responses with errors (an error may be transient)', async () => {
    const partial = '{ books(limit: 1) { id } users(limit: 0) { id } }';
    const first = await server.gql(partial);
    expect(first.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(first.body.data).toBeNull();
    // Counted by the cache itself: the statements of `books` may still be under way when the error is answered.
    const { hits, misses } = server.inkwell.responseCache!.stats;
    const second = await server.gql(partial);
    expect(second.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(server.inkwell.responseCache!.stats).toEqual({ hits, misses: misses + 1 });
  });

  it('a cached query still honours content negotiation, GET and persisted queries', async () => {
    const query = '{ books(limit: 3) { id title } }';
    const warm = await counted(query);
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

    const refused = await post({ accept: 'text/plain' }, { query });
    expect(refused.status).toBe(406);
    const legacy = await post({ accept: 'application/json' }, { query });
    expect(legacy.headers.get('content-type')).toMatch(/^application\/json/);
    expect(withoutCost(await legacy.json())).toEqual({ data: warm.data });
    const modern = await post({ accept: 'application/graphql-response+json' }, { query });
    expect(modern.headers.get('content-type')).toMatch(/^application\/graphql-response\+json/);

    const viaGet = await fetch(`${server.url}/graphql?query=${encodeURIComponent(query)}`, { headers: { accept: 'application/json' } });
    expect(withoutCost(await viaGet.json())).toEqual({ data: warm.data });

    const { createHash } = await import('node:crypto');
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };
    const miss = (await (await post({}, { extensions })).json()) as { errors: { extensions: { code: string } }[] };
    expect(miss.errors[0]!.extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(withoutCost(await (await post({}, { query, extensions })).json())).toEqual({ data: warm.data });
    expect(withoutCost(await (await post({}, { extensions })).json())).toEqual({ data: warm.data });

    const mutationOverGet = await fetch(`${server.url}/graphql?query=${encodeURIComponent('mutation { deletePost(id: "x") }')}`);
    expect(mutationOverGet.status).toBe(405);
  });
});
