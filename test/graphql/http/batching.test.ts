import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostRow, ReactionRow } from '../../../src/db/schema.js';
import { userRows } from '../../helpers/rows.js';
import { startServer, type TestServer } from '../../helpers/server.js';

/**
 * docs/graphql-endpoint.md ("Execution"): resolving `users { posts { author { name postsCount } } }` costs a
 * constant number of SQL statements, whatever the number of users and posts; loaders
 * batch and cache within one request only.
 */
let server: TestServer;
const USERS = 120;
const POSTS_PER_USER = 3; // two published, one draft

beforeAll(async () => {
  server = await startServer();
  const db = server.inkwell.backends.db.kysely;
  const base = Date.parse('2024-06-01T00:00:00.000Z');
  const at = (n: number) => new Date(base + n * 1000).toISOString();
  const users = userRows(USERS, at);
  const posts: PostRow[] = users.flatMap((u, i) =>
    Array.from({ length: POSTS_PER_USER }, (_, j) => ({
      id: `p-${i}-${j}`,
      author_id: u.id,
      title: `Post ${j} by ${u.name}`,
      content: null,
      published: j < 2 ? 1 : 0,
      tags: null,
      created_at: at(10_000 + i * 10 + j),
      updated_at: at(10_000 + i * 10 + j),
    })),
  );
  // Each published post gets a like from the next two users.
  const reactions: ReactionRow[] = posts
    .filter((p) => p.published === 1)
    .flatMap((p, k) =>
      [1, 2].map((d) => ({ id: `r-${k}-${d}`, post_id: p.id, user_id: users[(k + d) % USERS]!.id, type: 'like', created_at: at(50_000 + k * 3 + d) })),
    );
  await db.insertInto('users').values(users).execute();
  for (let i = 0; i < posts.length; i += 100) await db.insertInto('posts').values(posts.slice(i, i + 100)).execute();
  for (let i = 0; i < reactions.length; i += 100) await db.insertInto('reactions').values(reactions.slice(i, i + 100)).execute();
});
afterAll(() => server.close());

/** Runs one operation and returns its data with the number of SQL statements it took. */
async function counted(query: string, variables?: Record<string, unknown>) {
  const before = server.inkwell.backends.db.queryCount;
  const res = await server.gql(query, variables);
  const statements = server.inkwell.backends.db.queryCount - before;
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  expect(res.status).toBe(200);
  return { data: res.body.data as any, statements };
}

describe('a constant number of SQL statements', () => {
  const usersPostsAuthors = 'query ($n: Int!) { users(limit: $n) { name posts(limit: 2) { title author { name postsCount } } } }';

  it('resolves users { posts { author { name postsCount } } } in as many statements for 10 users as for 100', async () => {
    const ten = await counted(usersPostsAuthors, { n: 10 });
    const hundred = await counted(usersPostsAuthors, { n: 100 });
    expect(ten.data.users).toHaveLength(10);
    expect(hundred.data.users).toHaveLength(100);
    // users, posts by author, counts by author: one batch each (the authors are the
    // listed users, read by the list); plus one for the published posts of the authors
    // whose newest posts include a draft this caller may not see (the first batch is the
    // same for every caller, src/domain/posts.ts).
    expect(hundred.statements).toBe(ten.statements);
    expect(hundred.statements).toBeLessThanOrEqual(5);
    // And the answers are right: every author is the user, postsCount counts visible posts only.
    for (const user of hundred.data.users) {
      expect(user.posts).toHaveLength(2);
      for (const post of user.posts) {
        expect(post.title).toContain(`by ${user.name}`);
        expect(post.author).toEqual({ name: user.name, postsCount: 2 });
      }
    }
  });

  it('stays bounded with reactions, their users and likes on every post', async () => {
    const q = 'query ($n: Int!) { posts(limit: $n) { likes author { name } reactions(limit: 2) { type user { name postsCount } post { id } } } }';
    // One list, then one batch per loader: likes, users, reactions; users again (reactors),
    // posts, counts. A reactor who is also an author shares the first users batch's
    // pending promise, so with an asynchronous driver the counts may come in two waves,
    // and the reactors may go out in the authors' users statement when both are asked in
    // one event-loop turn (src/db/shared-batch.ts): 6 to 8 statements, whatever the
    // number of posts.
    const runs = [await counted(q, { n: 10 }), await counted(q, { n: 50 }), await counted(q, { n: 100 })];
    expect(runs[2]!.data.posts).toHaveLength(100);
    for (const run of runs) {
      expect(run.statements).toBeGreaterThanOrEqual(6);
      expect(run.statements).toBeLessThanOrEqual(8);
    }
    const hundred = runs[2]!;
    for (const post of hundred.data.posts) {
      expect(post.likes).toBe(2);
      expect(post.reactions).toHaveLength(2);
    }
  });

  it("reads the listed users' posts' authors from the list: asking for them costs no statement", async () => {
    const withAuthors = await counted('{ users(limit: 50) { id posts(limit: 2) { author { id name } } } }');
    const without = await counted('{ users(limit: 50) { id posts(limit: 2) { id } } }');
    expect(withAuthors.statements).toBe(without.statements);
    for (const user of withAuthors.data.users) for (const post of user.posts) expect(post.author.id).toBe(user.id);
  });

  it('shares one batch between aliases with the same arguments, and one per distinct page', async () => {
    const same = await counted('{ a: users(limit: 50) { posts(limit: 2) { id } } b: users(limit: 50) { posts(limit: 2) { id } } }');
    const distinct = await counted('{ a: users(limit: 50) { posts(limit: 2) { id } } b: users(limit: 50) { posts(limit: 1) { id } } }');
    // Two users lists, one posts batch, and the published posts again where a draft is hidden.
    expect(same.statements).toBe(4);
    expect(distinct.statements).toBe(6);
    expect(distinct.data.b[0].posts).toEqual([same.data.a[0].posts[0]]);
  });
});

describe('loaders live for one request only', () => {
  it('sees a change made between two requests', async () => {
    const q = '{ user(id: "u-007") { name posts(limit: 1) { author { name } } } }';
    const first = await counted(q);
    expect(first.data.user.name).toBe('User 7');
    await sql`UPDATE users SET name = 'Renamed' WHERE id = 'u-007'`.execute(server.inkwell.backends.db.kysely);
    const second = await counted(q);
    expect(second.data.user).toEqual({ name: 'Renamed', posts: [{ author: { name: 'Renamed' } }] });
  });
});
