import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../helpers/server.js';

/**
 * The whole query language over real HTTP, anonymously, on the seeded demo data:
 * arguments, aliases, fragments, variables and defaults, operationName, directives,
 * __typename, selection order, coercion, partial results and null propagation, and the
 * field rules that apply to anonymous callers.
 */
let server: TestServer;
/** Every post row (published or not), straight from the database. */
let allPosts: { id: string; title: string; published: number; author_id: string }[];
let users: { id: string; email: string | null; name: string }[];

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  const db = server.inkwell.backends.db.kysely;
  allPosts = await db.selectFrom('posts').select(['id', 'title', 'published', 'author_id']).execute();
  users = await db.selectFrom('users').select(['id', 'email', 'name']).execute();
});
afterAll(() => server.close());

const ok = async (query: string, variables?: Record<string, unknown>, operationName?: string) => {
  const res = await server.gql(query, variables, operationName ? { operationName } : {});
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data as any;
};

const published = () => allPosts.filter((p) => p.published === 1);
const byEmail = (email: string) => users.find((u) => u.email === email)!;

describe('arguments and aliases', () => {
  it('passes arguments: limit and offset page the newest-first list', async () => {
    const all = await ok('{ posts(limit: 100) { id createdAt } }');
    expect(all.posts).toHaveLength(published().length);
    const times = all.posts.map((p: { createdAt: string }) => p.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const page = await ok('{ posts(limit: 3, offset: 2) { id } }');
    expect(page.posts.map((p: { id: string }) => p.id)).toEqual(all.posts.slice(2, 5).map((p: { id: string }) => p.id));
  });

  it('filters users by role', async () => {
    const data = await ok('{ users(role: "editor") { name role } }');
    expect(data.users.map((u: { name: string }) => u.name).sort()).toEqual(['Eddie Editor', 'Edna Editor']);
  });

  it('keys results by alias, the same field twice with different arguments', async () => {
    const data = await ok('{ first: posts(limit: 1) { id } three: posts(limit: 3) { postId: id heading: title } books(limit: 1) { title } }');
    expect(Object.keys(data)).toEqual(['first', 'three', 'books']);
    expect(data.first).toHaveLength(1);
    expect(data.three).toHaveLength(3);
    expect(Object.keys(data.three[0])).toEqual(['postId', 'heading']);
    expect(data.three[0].postId).toBe(data.first[0].id);
  });

  it('answers exactly the selected fields in selection order', async () => {
    const data = await ok('{ books(limit: 2) { year title id author } users(limit: 1) { createdAt role name } }');
    expect(Object.keys(data)).toEqual(['books', 'users']);
    for (const book of data.books) expect(Object.keys(book)).toEqual(['year', 'title', 'id', 'author']);
    expect(Object.keys(data.users[0])).toEqual(['createdAt', 'role', 'name']);
  });

  it('answers __typename at every level', async () => {
    const data = await ok('{ __typename posts(limit: 1) { __typename author { __typename } reactions(limit: 1) { __typename } } }');
    expect(data.__typename).toBe('Query');
    expect(data.posts[0].__typename).toBe('Post');
    expect(data.posts[0].author.__typename).toBe('User');
    expect(data.posts[0].reactions.every((r: { __typename: string }) => r.__typename === 'Reaction')).toBe(true);
  });
});

describe('fragments', () => {
  it('spreads named fragments, nested ones too, and merges them with fields', async () => {
    const data = await ok(`
      query { posts(limit: 2) { ...PostBits title } }
      fragment PostBits on Post { id author { ...Who } }
      fragment Who on User { name role }
    `);
    expect(Object.keys(data.posts[0])).toEqual(['id', 'author', 'title']);
    expect(Object.keys(data.posts[0].author)).toEqual(['name', 'role']);
  });

  it('applies inline fragments with and without a type condition', async () => {
    const data = await ok('{ books(limit: 1) { ... on Book { title } ... { year } } me { ... on User { id } } }');
    expect(Object.keys(data.books[0])).toEqual(['title', 'year']);
    expect(data.me).toBeNull();
  });
});

describe('variables, operation names and directives', () => {
  const doc = 'query Page($limit: Int = 2, $offset: Int) { posts(limit: $limit, offset: $offset) { id } }';

  it('uses a variable default when the variable is absent', async () => {
    expect((await ok(doc)).posts).toHaveLength(2);
    expect((await ok(doc, { limit: 4 })).posts).toHaveLength(4);
  });

  it('falls back to the argument default when a nullable variable is absent', async () => {
    const [all, paged] = [await ok('{ posts(limit: 3) { id } }'), await ok(doc, { limit: 3 })];
    expect(paged.posts).toEqual(all.posts);
  });

  it('runs the operation named by operationName', async () => {
    const two = `
      query Books { books(limit: 1) { title } }
      query Users { users(limit: 1) { name } }
    `;
    expect(Object.keys(await ok(two, undefined, 'Books'))).toEqual(['books']);
    expect(Object.keys(await ok(two, undefined, 'Users'))).toEqual(['users']);
  });

  it('honours @include and @skip, literal and from variables', async () => {
    const q = `query ($withTitle: Boolean!, $skipId: Boolean = false) {
      books(limit: 1) { id @skip(if: $skipId) title @include(if: $withTitle) year @skip(if: true) author @include(if: true) }
    }`;
    expect(Object.keys((await ok(q, { withTitle: true })).books[0])).toEqual(['id', 'title', 'author']);
    expect(Object.keys((await ok(q, { withTitle: false, skipId: true })).books[0])).toEqual(['author']);
  });

  it('applies directives to fragment spreads and inline fragments', async () => {
    const q = `query ($on: Boolean!) {
      books(limit: 1) { ...Y @include(if: $on) ... @skip(if: $on) { author } }
    }
    fragment Y on Book { year }`;
    expect(Object.keys((await ok(q, { on: true })).books[0])).toEqual(['year']);
    expect(Object.keys((await ok(q, { on: false })).books[0])).toEqual(['author']);
  });
});

describe('coercion', () => {
  it('coerces an Int literal and an Int variable to ID', async () => {
    expect((await ok('{ user(id: 12345) { id } }')).user).toBeNull();
    expect((await ok('query ($id: ID!) { user(id: $id) { id } }', { id: 12345 })).user).toBeNull();
    const someone = users[0]!;
    expect((await ok('query ($id: ID!) { user(id: $id) { id } }', { id: someone.id })).user).toEqual({ id: someone.id });
  });

  it('coerces a whole-number float variable to Int', async () => {
    expect((await ok('query ($n: Int) { books(limit: $n) { id } }', { n: 2.0 })).books).toHaveLength(2);
  });

  it('serialises output types: ID as string, Boolean, Int, lists of String', async () => {
    const data = await ok('{ posts(limit: 100) { id published likes tags } books(limit: 100) { year } }');
    for (const post of data.posts) {
      expect(typeof post.id).toBe('string');
      expect(post.published).toBe(true);
      expect(Number.isInteger(post.likes)).toBe(true);
      expect(post.tags === null || post.tags.every((t: unknown) => typeof t === 'string')).toBe(true);
    }
    expect(data.books.map((b: { year: number }) => b.year)).toContain(-700);
  });

  it('counts likes and lists reactions newest first', async () => {
    const welcome = allPosts.find((p) => p.title === 'Welcome to Inkwell')!;
    const data = await ok('query ($id: ID!) { post(id: $id) { likes reactions { type createdAt user { name } } } }', { id: welcome.id });
    expect(data.post.likes).toBe(3);
    expect(data.post.reactions.map((r: { type: string }) => r.type).sort()).toEqual(['like', 'like', 'like', 'love']);
    const times = data.post.reactions.map((r: { createdAt: string }) => r.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
  });
});

describe('lookups and field rules for anonymous callers', () => {
  it('returns null without an error for unknown ids', async () => {
    const data = await ok('{ user(id: "no-such-user") { id } post(id: "no-such-post") { id } book(id: "no-such-book") { id } }');
    expect(data).toEqual({ user: null, post: null, book: null });
  });

  it('finds records by id', async () => {
    const book = await server.inkwell.backends.db.kysely.selectFrom('books').selectAll().executeTakeFirstOrThrow();
    const data = await ok('query ($id: ID!) { book(id: $id) { id title author year } }', { id: book.id });
    expect(data.book).toEqual({ id: book.id, title: book.title, author: book.author, year: book.year });
  });

  it('hides User.email from anonymous callers', async () => {
    const data = await ok('{ users(limit: 100) { email } me { id } }');
    expect(data.users).toHaveLength(users.length);
    expect(data.users.every((u: { email: unknown }) => u.email === null)).toBe(true);
    expect(users.every((u) => typeof u.email === 'string')).toBe(true);
    const alice = byEmail('alice@inkwell.test');
    expect((await ok('query ($id: ID!) { user(id: $id) { email } }', { id: alice.id })).user).toEqual({ email: null });
    expect(data.me).toBeNull();
  });

  it('hides unpublished posts from anonymous callers: lists, lookups, authors’ posts and counts', async () => {
    const drafts = allPosts.filter((p) => p.published === 0);
    expect(drafts.length).toBeGreaterThan(0);
    const listed = (await ok('{ posts(limit: 100) { id published } }')).posts;
    expect(listed.map((p: { id: string }) => p.id).sort()).toEqual(published().map((p) => p.id).sort());
    for (const draft of drafts) {
      expect((await ok('query ($id: ID!) { post(id: $id) { id } }', { id: draft.id })).post).toBeNull();
    }
    const alice = byEmail('alice@inkwell.test');
    const own = allPosts.filter((p) => p.author_id === alice.id);
    const data = await ok('query ($id: ID!) { user(id: $id) { postsCount posts { id title } } }', { id: alice.id });
    expect(own.length).toBe(2);
    expect(data.user.postsCount).toBe(1);
    expect(data.user.posts.map((p: { title: string }) => p.title)).toEqual(['Down the rabbit hole of GraphQL']);
  });
});

describe('field errors: partial results and null propagation', () => {
  it.each([
    ['limit: 0', 'limit'],
    ['limit: 101', 'limit'],
    ['offset: -1', 'offset'],
  ])('refuses %s with BAD_USER_INPUT as a field error (200, null propagates from the non-null list)', async (args, argument) => {
    const res = await server.gql(`{ posts(${args}) { id } }`);
    expect(res.status).toBe(200);
    // Query.posts is non-null, so its null reaches `data`.
    expect(res.body).toHaveProperty('data', null);
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]).toMatchObject({ path: ['posts'], extensions: { code: 'BAD_USER_INPUT', argument } });
  });

  it.each(['users(limit: 101)', 'books(offset: -1)', 'users(limit: 0)', 'books(limit: 0)'])('refuses %s on every list', async (field) => {
    const res = await server.gql(`{ ${field} { id } }`);
    expect(res.status).toBe(200);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('keeps the siblings of a failed field and nulls the nearest nullable parent', async () => {
    const alice = byEmail('alice@inkwell.test');
    const res = await server.gql(
      'query ($id: ID!) { broken: user(id: $id) { name posts(limit: 0) { id } } fine: user(id: $id) { name } books(limit: 2) { id } }',
      { id: alice.id },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ broken: null, fine: { name: alice.name }, books: [expect.any(Object), expect.any(Object)] });
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors![0]).toMatchObject({ path: ['broken', 'posts'], extensions: { code: 'BAD_USER_INPUT', argument: 'limit' } });
    expect(res.body.errors![0]!.message).toMatch(/limit/);
  });

  it('propagates a nested error through non-null lists up to the nullable root field', async () => {
    const res = await server.gql('{ posts(limit: 2) { id reactions(offset: -1) { id } } book(id: "x") { id } }');
    expect(res.status).toBe(200);
    // Post.reactions → Post! → [Post!]! → Query.posts (non-null) → data.
    expect(res.body.data).toBeNull();
    expect(res.body.errors!.length).toBeGreaterThanOrEqual(1);
    for (const e of res.body.errors!) {
      expect(e.extensions?.code).toBe('BAD_USER_INPUT');
      expect(e.path?.[0]).toBe('posts');
      expect(e.path?.at(-1)).toBe('reactions');
    }
  });

  it('reports the same field error once per failing position, each with its own path', async () => {
    const res = await server.gql('{ users(limit: 2) { name posts(limit: 500) { id } } }');
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    const paths = res.body.errors!.map((e) => JSON.stringify(e.path));
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths).toContain(JSON.stringify(['users', 0, 'posts']));
  });
});
