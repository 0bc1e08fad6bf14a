import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn } from '../../helpers/auth.js';
import { startServer, type TestServer } from '../../helpers/server.js';

/**
 * Lists of posts (`posts`, a user's `posts`) are read as listings (no content, no tags)
 * unless the selection asks for either (docs/decisions.md, "Lists read what the query
 * asks"). However the selection asks — directly, under an alias, in an inline or named
 * fragment, nested fragments, a directive — the answer holds the stored content and tags,
 * for every caller's view of the drafts.
 */
let server: TestServer;
let rows: { id: string; author_id: string; content: string | null; tags: string | null; published: number; created_at: string }[];

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  rows = await server.inkwell.backends.db.kysely.selectFrom('posts').select(['id', 'author_id', 'content', 'tags', 'published', 'created_at']).execute();
  expect(rows.some((r) => r.content !== null && r.tags !== null)).toBe(true);
});
afterAll(() => server.close());

const ok = async (query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) => {
  const res = await server.gql(query, variables, { headers });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data as any;
};

/** Every listed user's posts, checked against the stored rows: ids in order, and `content`/`tags` where asked. */
function expectStored(users: { id: string; posts: Record<string, unknown>[] }[], fields: { content?: string; tags?: string }) {
  let checked = 0;
  for (const user of users) {
    const stored = rows
      .filter((r) => r.author_id === user.id && r.published === 1)
      .sort((a, b) => (a.created_at === b.created_at ? b.id.localeCompare(a.id) : b.created_at.localeCompare(a.created_at)));
    expect(user.posts.map((p) => p['id'])).toEqual(stored.slice(0, user.posts.length).map((r) => r.id));
    for (const [i, post] of user.posts.entries()) {
      if (fields.content) expect(post[fields.content]).toBe(stored[i]!.content);
      if (fields.tags) expect(post[fields.tags]).toEqual(stored[i]!.tags === null ? null : JSON.parse(stored[i]!.tags!));
      checked++;
    }
  }
  expect(checked).toBeGreaterThan(3);
}

describe("a user's posts", () => {
  it('without content or tags: the listing answers every other field', async () => {
    const data = await ok('{ users(limit: 20) { id posts(limit: 5) { id title published createdAt author { id } } } }');
    expectStored(data.users, {});
    for (const user of data.users) for (const post of user.posts) expect(post.author.id).toBe(user.id);
  });

  it.each([
    ['directly', '{ users(limit: 20) { id posts(limit: 5) { id content tags } } }', { content: 'content', tags: 'tags' }],
    ['under aliases', '{ users(limit: 20) { id posts(limit: 5) { id body: content labels: tags } } }', { content: 'body', tags: 'labels' }],
    ['in an inline fragment', '{ users(limit: 20) { id posts(limit: 5) { id ... on Post { content } } } }', { content: 'content' }],
    ['in a named fragment', '{ users(limit: 20) { id posts(limit: 5) { id ...Body } } } fragment Body on Post { tags }', { tags: 'tags' }],
    ['in a fragment of a fragment', '{ users(limit: 20) { id posts(limit: 5) { ...Outer } } } fragment Outer on Post { id ... on Post { ...Inner } } fragment Inner on Post { content }', { content: 'content' }],
    ['under @include', 'query ($b: Boolean!) { users(limit: 20) { id posts(limit: 5) { id content @include(if: $b) } } }', { content: 'content' }],
  ] as const)('with content or tags asked %s: as stored', async (_how, query, fields) => {
    expectStored((await ok(query, { b: true })).users, fields);
  });

  it('a listing and a whole post of the same author in one operation', async () => {
    const data = await ok('{ users(limit: 20) { id short: posts(limit: 3) { id } long: posts(limit: 3) { id content } } }');
    expectStored(data.users.map((u: any) => ({ id: u.id, posts: u.short })), {});
    expectStored(data.users.map((u: any) => ({ id: u.id, posts: u.long })), { content: 'content' });
  });

  it('content skipped by @include(if: false) is left out of the answer', async () => {
    const data = await ok('query ($b: Boolean!) { users(limit: 20) { id posts(limit: 5) { id content @include(if: $b) } } }', { b: false });
    expectStored(data.users, {});
    for (const user of data.users) for (const post of user.posts) expect(post).not.toHaveProperty('content');
  });
});

describe('the posts list', () => {
  const newestFirst = (visible: (r: (typeof rows)[number]) => boolean) =>
    rows.filter(visible).sort((a, b) => (a.created_at === b.created_at ? b.id.localeCompare(a.id) : b.created_at.localeCompare(a.created_at)));

  it.each([
    ['anonymous', undefined],
    ['an editor (every draft)', 'editor@inkwell.test'],
    ['an author (their own drafts)', 'alice@inkwell.test'],
  ] as const)('as %s: a listing, and content and tags as stored', async (_who, email) => {
    const signed = email ? await signIn(server, email) : undefined;
    const headers = signed?.headers;
    const me = signed?.user.id;
    const stored = newestFirst((r) => r.published === 1 || email === 'editor@inkwell.test' || r.author_id === me);
    expect(stored.some((r) => r.published === 0)).toBe(email !== undefined);
    const listed = await ok('{ posts(limit: 100) { id title published } }', undefined, headers);
    expect(listed.posts.map((p: { id: string }) => p.id)).toEqual(stored.map((r) => r.id));
    const whole = await ok('{ posts(limit: 100) { id ...Body } } fragment Body on Post { content tags }', undefined, headers);
    expect(whole.posts).toEqual(stored.map((r) => ({ id: r.id, content: r.content, tags: r.tags === null ? null : JSON.parse(r.tags) })));
  });
});
