import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type SignedIn } from '../../helpers/auth.js';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * Mutations over the wire with signed-in demo accounts (POST /api/auth/login): every
 * input rule of docs/schema.md is BAD_USER_INPUT naming the argument, a rejected mutation
 * stores nothing, permissions (UNAUTHENTICATED / FORBIDDEN), NOT_FOUND messages,
 * coercion of mutation arguments, and the per-caller field rules of section 4.
 */
let server: TestServer;
let admin: SignedIn;
let editor: SignedIn;
let editor2: SignedIn;
let alice: SignedIn;
let bob: SignedIn;
let editor2Draft: string;
let editorPost: string;
let alicePost: string;

const TABLES = ['users', 'posts', 'reactions', 'books', 'sessions'] as const;
async function snapshot() {
  const db = server.inkwell.backends.db.kysely;
  const out: Record<string, unknown> = {};
  for (const t of TABLES) out[t] = await db.selectFrom(t).selectAll().execute();
  return JSON.stringify(out);
}

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  admin = await signIn(server, 'admin@inkwell.test');
  editor = await signIn(server, 'editor@inkwell.test');
  editor2 = await signIn(server, 'editor2@inkwell.test');
  alice = await signIn(server, 'alice@inkwell.test');
  bob = await signIn(server, 'bob@inkwell.test');
  const db = server.inkwell.backends.db.kysely;
  const id = async (title: string) => (await db.selectFrom('posts').select('id').where('title', '=', title).executeTakeFirstOrThrow()).id;
  editor2Draft = await id('Draft: spring reading list');
  editorPost = await id('How we choose what to publish');
  alicePost = await id('Down the rabbit hole of GraphQL');
});
afterAll(() => server.close());

const as = (who: SignedIn | undefined, query: string, variables?: Record<string, unknown>) =>
  server.gql(query, variables, who ? { headers: who.headers } : {});

/** Runs a mutation that must fail as a field error with `code` (and `argument`), storing nothing. */
async function rejected(who: SignedIn | undefined, query: string, variables: Record<string, unknown> | undefined, code: string, argument?: string) {
  const before = await snapshot();
  const res = await as(who, query, variables);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.data, JSON.stringify(res.body)).toBeNull();
  expect(res.body.errors).toHaveLength(1);
  const error = res.body.errors![0]! as { message: string; extensions: Record<string, unknown>; path: unknown[] };
  expect(error.extensions.code, JSON.stringify(error)).toBe(code);
  if (argument) {
    expect(error.extensions['argument']).toBe(argument);
    expect(error.message.toLowerCase()).toContain(argument.toLowerCase());
  }
  expect(await snapshot()).toBe(before);
  return error;
}

const long = (n: number, c = 'a') => c.repeat(n);

describe('sign-in', () => {
  it('gives each demo account a bearer token the endpoint recognises', async () => {
    const res = await as(alice, '{ me { id name email role } }');
    expect(res.body.data).toEqual({ me: { id: alice.user.id, name: 'Alice Liddell', email: 'alice@inkwell.test', role: 'user' } });
    expect((await as(admin, '{ me { role } }')).body.data).toEqual({ me: { role: 'admin' } });
  });
});

describe('input rules: BAD_USER_INPUT naming the argument, nothing stored', () => {
  const createUser = 'mutation ($name: String!, $email: String!, $age: Int, $role: String) { createUser(name: $name, email: $email, age: $age, role: $role) { id } }';
  const okUser = { name: 'New Person', email: 'new.person@example.com' };

  it.each([
    ['name', { name: '' }],
    ['name', { name: long(101) }],
    ['name', { name: long(101, '😀') }],
    ['name', { name: 'a\u0000b' }],
    ['email', { email: 'not-an-email' }],
    ['email', { email: 'a@b' }],
    ['email', { email: `${long(64)}@${long(63)}.${long(63)}.${long(63)}.com` }],
    ['email', { email: '' }],
    ['email', { email: 'x\u0000@example.com' }],
    ['age', { age: -1 }],
    ['age', { age: 151 }],
    ['role', { role: 'superuser' }],
    ['role', { role: 'Admin' }],
  ])('createUser refuses %s %j', async (argument, patch) => {
    await rejected(admin, createUser, { ...okUser, ...patch }, 'BAD_USER_INPUT', argument);
  });

  it('createUser refuses an email already in use, compared lower-cased', async () => {
    await rejected(admin, createUser, { ...okUser, email: 'ALICE@Inkwell.Test' }, 'BAD_USER_INPUT', 'email');
  });

  it('createUser accepts the bounds, stores the email lower-cased and a name of 100 emoji', async () => {
    const res = await as(admin, 'mutation ($name: String!, $email: String!) { createUser(name: $name, email: $email, age: 150, role: "editor") { name email age role } }', {
      name: long(100, '😀'),
      email: '  Mixed.Case@Example.COM ',
    });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data).toEqual({ createUser: { name: long(100, '😀'), email: 'mixed.case@example.com', age: 150, role: 'editor' } });
  });

  const updateUser = 'mutation ($id: ID!, $name: String, $email: String, $age: Int, $avatar: String) { updateUser(id: $id, name: $name, email: $email, age: $age, avatar: $avatar) { id } }';
  it.each([
    ['avatar', { avatar: 'ftp://example.com/a.png' }],
    ['avatar', { avatar: 'javascript:alert(1)' }],
    ['avatar', { avatar: 'not a url' }],
    ['avatar', { avatar: `https://example.com/${long(2049 - 20)}` }],
    ['name', { name: null }],
    ['email', { email: null }],
    ['email', { email: 'bob@inkwell.test' }],
    ['age', { age: 200 }],
  ])('updateUser refuses %s %j', async (argument, patch) => {
    await rejected(alice, updateUser, { id: alice.user.id, ...patch }, 'BAD_USER_INPUT', argument);
  });

  it('updateUser accepts a 2,048-character https avatar and clears it with null', async () => {
    const avatar = `https://example.com/${long(2048 - 20)}`;
    expect(avatar.length).toBe(2048);
    const set = await as(alice, updateUser.replace('{ id }', '{ avatar }'), { id: alice.user.id, avatar });
    expect(withoutCost(set.body)).toEqual({ data: { updateUser: { avatar } } });
    const cleared = await as(alice, updateUser.replace('{ id }', '{ avatar }'), { id: alice.user.id, avatar: null });
    expect(withoutCost(cleared.body)).toEqual({ data: { updateUser: { avatar: null } } });
  });

  const createPost = 'mutation ($title: String!, $content: String, $authorId: ID!, $tags: [String!]) { createPost(title: $title, content: $content, authorId: $authorId, tags: $tags) { id } }';
  const okPost = () => ({ title: 'A title', authorId: editor.user.id });
  it.each([
    ['title', { title: '' }],
    ['title', { title: long(201) }],
    ['title', { title: 'nul\u0000' }],
    ['content', { content: long(50_001) }],
    ['content', { content: 'nul\u0000' }],
    ['tags', { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }],
    ['tags', { tags: [''] }],
    ['tags', { tags: [long(33)] }],
    ['tags', { tags: ['ok', 'nul\u0000'] }],
  ])('createPost refuses %s', async (argument, patch) => {
    await rejected(editor, createPost, { ...okPost(), ...patch }, 'BAD_USER_INPUT', argument);
  });

  it('createPost accepts the bounds and stores strings verbatim', async () => {
    const title = `<b>${long(193)}</b>`;
    expect(title.length).toBe(200);
    const tags = Array.from({ length: 10 }, (_, i) => `${i}${long(31)}`);
    const prefix = `<script>alert("x")</script> & 'quotes' `;
    const content = prefix + long(50_000 - prefix.length);
    expect(content.length).toBe(50_000);
    const res = await as(editor, createPost.replace('{ id }', '{ title content tags published author { id } }'), { ...okPost(), title, content, tags });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data).toEqual({ createPost: { title, content, tags, published: false, author: { id: editor.user.id } } });
  });

  it('updatePost refuses a null title and an over-long one', async () => {
    const updatePost = 'mutation ($id: ID!, $title: String) { updatePost(id: $id, title: $title) { id } }';
    await rejected(editor, updatePost, { id: editorPost, title: null }, 'BAD_USER_INPUT', 'title');
    await rejected(editor, updatePost, { id: editorPost, title: long(201) }, 'BAD_USER_INPUT', 'title');
  });

  const addReaction = 'mutation ($postId: ID!, $type: String!) { addReaction(postId: $postId, type: $type) { id type } }';
  it.each(['', 'Like', 'a b', 'like!', long(33), 'ünïcode', 'nul\u0000'])('addReaction refuses type %j', async (type) => {
    await rejected(bob, addReaction, { postId: alicePost, type }, 'BAD_USER_INPUT', 'type');
  });

  it('addReaction accepts a-z, 0-9, _ and - up to 32 characters', async () => {
    const type = `a-b_c9${long(26)}`;
    const res = await as(bob, addReaction, { postId: alicePost, type });
    expect(withoutCost(res.body)).toEqual({ data: { addReaction: { id: expect.any(String), type } } });
  });

  const addBook = 'mutation ($title: String!, $author: String!, $year: Int) { addBook(title: $title, author: $author, year: $year) { id title author year } }';
  it.each([
    ['title', { title: '' }],
    ['title', { title: long(201) }],
    ['author', { author: '' }],
    ['author', { author: long(101) }],
    ['year', { year: 3001 }],
    ['year', { year: -3001 }],
    ['title', { title: 'nul\u0000' }],
  ])('addBook refuses %s %j', async (argument, patch) => {
    await rejected(editor, addBook, { title: 'T', author: 'A', ...patch }, 'BAD_USER_INPUT', argument);
  });

  it('addBook accepts years -3000 and 3000', async () => {
    for (const year of [-3000, 3000]) {
      const res = await as(editor, addBook, { title: long(200), author: long(100), year });
      expect(res.body.data).toEqual({ addBook: { id: expect.any(String), title: long(200), author: long(100), year } });
    }
  });

  it('refuses the NUL character in id arguments too', async () => {
    await rejected(admin, 'mutation { deletePost(id: "x\\u0000") }', undefined, 'BAD_USER_INPUT', 'id');
  });

  it('users(role:) refuses an unknown role as a field error', async () => {
    const res = await as(admin, '{ users(role: "root") { id } }');
    expect(res.status).toBe(200);
    expect(res.body.errors![0]).toMatchObject({ extensions: { code: 'BAD_USER_INPUT', argument: 'role' } });
  });
});

describe('a rejected mutation stores nothing', () => {
  it('variables of the wrong type: 400, nothing stored', async () => {
    const before = await snapshot();
    const res = await as(editor, 'mutation ($year: Int) { addBook(title: "T", author: "A", year: $year) { id } }', { year: '1999' });
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
    expect(res.body.errors![0]!.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(await snapshot()).toBe(before);
  });

  it('a validation error anywhere in the document: 400, nothing stored', async () => {
    const before = await snapshot();
    const res = await as(editor, 'mutation { addBook(title: "T", author: "A") { id isbn } }');
    expect(res.status).toBe(400);
    expect(await snapshot()).toBe(before);
  });

  it('over GET with a valid token: 405, nothing stored', async () => {
    const before = await snapshot();
    const search = new URLSearchParams({ query: 'mutation { addBook(title: "Via GET", author: "A") { id } }' });
    const response = await fetch(`${server.url}/graphql?${search}`, { headers: { ...editor.headers, accept: 'application/json' } });
    expect(response.status).toBe(405);
    expect(await snapshot()).toBe(before);
  });

  it('as a form post with a valid token: 415, nothing stored', async () => {
    const before = await snapshot();
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { ...editor.headers, 'content-type': 'application/x-www-form-urlencoded' },
      body: `query=${encodeURIComponent('mutation { addBook(title: "Form", author: "A") { id } }')}`,
    });
    expect(response.status).toBe(415);
    expect(await snapshot()).toBe(before);
  });

  describe('authenticated by cookie (CSRF: never a simple cross-site request)', () => {
    const mutation = 'mutation { addBook(title: "By cookie", author: "A") { title } }';
    const cookieOf = () => {
      expect(editor.cookie, 'the login sets the auth-token cookie').toMatch(/^auth-token=./);
      return editor.cookie!;
    };

    it('a JSON POST with the cookie is signed in', async () => {
      const res = await server.gql('{ me { id } }', undefined, { headers: { cookie: cookieOf() } });
      expect(withoutCost(res.body)).toEqual({ data: { me: { id: editor.user.id } } });
    });

    it.each([
      ['text/plain', `{"query":${JSON.stringify(mutation)}}`],
      ['application/x-www-form-urlencoded', `query=${encodeURIComponent(mutation)}`],
      ['multipart/form-data; boundary=b', `--b\r\nContent-Disposition: form-data; name="query"\r\n\r\n${mutation}\r\n--b--`],
    ])('a %s POST with the cookie: 415, nothing stored', async (type, body) => {
      const before = await snapshot();
      const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { cookie: cookieOf(), 'content-type': type }, body });
      expect(response.status).toBe(415);
      expect(await snapshot()).toBe(before);
    });

    it('a GET mutation with the cookie: 405, nothing stored', async () => {
      const before = await snapshot();
      const response = await fetch(`${server.url}/graphql?${new URLSearchParams({ query: mutation })}`, { headers: { cookie: cookieOf() } });
      expect(response.status).toBe(405);
      expect(await snapshot()).toBe(before);
    });
  });

  it('siblings: the valid field stores, the invalid one does not', async () => {
    const db = server.inkwell.backends.db.kysely;
    const count = async () => Number((await db.selectFrom('books').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n);
    const before = await count();
    const res = await as(editor, 'mutation { good: addBook(title: "Kept", author: "A") { title } bad: addBook(title: "", author: "A") { title } }');
    expect(res.status).toBe(200);
    // addBook is non-null, so the failed one nulls the whole data; the good one still ran (mutations run in order).
    expect(res.body.data).toBeNull();
    expect(res.body.errors).toEqual([expect.objectContaining({ path: ['bad'], extensions: { code: 'BAD_USER_INPUT', argument: 'title' } })]);
    expect(await count()).toBe(before + 1);
    expect(await db.selectFrom('books').select('title').where('title', '=', '').executeTakeFirst()).toBeUndefined();
  });
});

describe('permissions', () => {
  const cases: [string, string, () => SignedIn | undefined, string][] = [
    ['anonymous createPost', 'mutation ($a: ID!) { createPost(title: "T", authorId: $a) { id } }', () => undefined, 'UNAUTHENTICATED'],
    ['anonymous addReaction', 'mutation ($p: ID!) { addReaction(postId: $p, type: "like") { id } }', () => undefined, 'UNAUTHENTICATED'],
    ['anonymous deleteUser', 'mutation ($a: ID!) { deleteUser(id: $a) }', () => undefined, 'UNAUTHENTICATED'],
    ['anonymous updateUser', 'mutation ($a: ID!) { updateUser(id: $a, name: "x") { id } }', () => undefined, 'UNAUTHENTICATED'],
    ['a user creating a user', 'mutation { createUser(name: "N", email: "n@example.com") { id } }', () => alice, 'FORBIDDEN'],
    ['an editor creating a user', 'mutation { createUser(name: "N", email: "n@example.com") { id } }', () => editor, 'FORBIDDEN'],
    ['a user creating a post', 'mutation ($a: ID!) { createPost(title: "T", authorId: $a) { id } }', () => alice, 'FORBIDDEN'],
    ['a user adding a book', 'mutation { addBook(title: "T", author: "A") { id } }', () => alice, 'FORBIDDEN'],
    ['an editor deleting a post', 'mutation ($p: ID!) { deletePost(id: $p) }', () => editor, 'FORBIDDEN'],
    ['a user updating another user', 'mutation ($b: ID!) { updateUser(id: $b, name: "x") { id } }', () => alice, 'FORBIDDEN'],
    ['a user changing their own role', 'mutation ($a: ID!) { updateUser(id: $a, role: "admin") { id } }', () => alice, 'FORBIDDEN'],
    ['a user deleting another user', 'mutation ($b: ID!) { deleteUser(id: $b) }', () => alice, 'FORBIDDEN'],
    ['an editor writing as another author', 'mutation ($e2: ID!) { createPost(title: "T", authorId: $e2) { id } }', () => editor, 'FORBIDDEN'],
    ['an editor changing another editor’s published post', 'mutation ($p: ID!) { updatePost(id: $p, title: "x") { id } }', () => editor2, 'FORBIDDEN'],
  ];
  it.each(cases)('%s is refused', async (_what, query, who, code) => {
    const variables = { a: alice.user.id, b: bob.user.id, e2: editor2.user.id, p: editorPost };
    const used = Object.fromEntries(Object.entries(variables).filter(([k]) => query.includes(`$${k}`)));
    await rejected(who(), query, used, code);
  });
});

describe('NOT_FOUND', () => {
  it.each([
    ['updatePost', 'mutation { updatePost(id: "nope", title: "x") { id } }', 'Post not found'],
    ['publishPost', 'mutation { publishPost(id: "nope") { id } }', 'Post not found'],
    ['deletePost', 'mutation { deletePost(id: "nope") }', 'Post not found'],
    ['addReaction', 'mutation { addReaction(postId: "nope", type: "like") { id } }', 'Post not found'],
    ['updateUser', 'mutation { updateUser(id: "nope", name: "x") { id } }', 'User not found'],
    ['deleteUser', 'mutation { deleteUser(id: "nope") }', 'User not found'],
    ['createPost for a missing author', 'mutation { createPost(title: "x", authorId: "nope") { id } }', 'User not found'],
  ])('%s on a missing record', async (_what, query, message) => {
    const error = await rejected(admin, query, undefined, 'NOT_FOUND');
    expect(error.message).toBe(message);
  });

  it('a post the caller may not see counts as missing', async () => {
    const error = await rejected(bob, 'mutation ($p: ID!) { addReaction(postId: $p, type: "like") { id } }', { p: editor2Draft }, 'NOT_FOUND');
    expect(error.message).toBe('Post not found');
  });
});

describe('coercion of mutation arguments', () => {
  it('coerces a single string to a one-element list, and applies the published default', async () => {
    const res = await as(editor, 'mutation ($a: ID!) { createPost(title: "Single tag", authorId: $a, tags: "solo") { tags published } }', { a: editor.user.id });
    expect(withoutCost(res.body)).toEqual({ data: { createPost: { tags: ['solo'], published: false } } });
    const viaVariable = await as(editor, 'mutation ($a: ID!, $t: [String!]) { createPost(title: "Var tag", authorId: $a, tags: $t) { tags } }', { a: editor.user.id, t: 'one' });
    expect(withoutCost(viaVariable.body)).toEqual({ data: { createPost: { tags: ['one'] } } });
  });

  it('refuses a null inside a [String!] list before anything runs', async () => {
    const before = await snapshot();
    const res = await as(editor, 'mutation ($a: ID!, $t: [String!]) { createPost(title: "x", authorId: $a, tags: $t) { id } }', { a: editor.user.id, t: ['a', null] });
    expect(res.status).toBe(400);
    expect(await snapshot()).toBe(before);
  });

  it('repeating a reaction returns the stored one', async () => {
    const q = 'mutation ($p: ID!) { addReaction(postId: $p, type: "insightful") { id } }';
    const first = await as(alice, q, { p: editorPost });
    const second = await as(alice, q, { p: editorPost });
    expect(first.body.errors).toBeUndefined();
    expect(second.body.data).toEqual(first.body.data);
  });
});

describe('field rules for signed-in callers', () => {
  const emails = '{ users(limit: 100) { id email } }';

  it('User.email: the user themself or an admin', async () => {
    const byAdmin = (await as(admin, emails)).body.data as { users: { email: string | null }[] };
    expect(byAdmin.users.every((u) => typeof u.email === 'string')).toBe(true);
    for (const who of [alice, editor]) {
      const seen = ((await as(who, emails)).body.data as { users: { id: string; email: string | null }[] }).users;
      for (const u of seen) expect(u.email).toBe(u.id === who.user.id ? who.user.email : null);
    }
  });

  it('unpublished posts: visible to their author and to editors and admins, not to other users', async () => {
    const q = 'query ($id: ID!) { post(id: $id) { id } }';
    for (const who of [editor2, editor, admin]) expect((await as(who, q, { id: editor2Draft })).body.data).toEqual({ post: { id: editor2Draft } });
    for (const who of [alice, undefined]) expect((await as(who, q, { id: editor2Draft })).body.data).toEqual({ post: null });
    const aliceDraft = await server.inkwell.backends.db.kysely.selectFrom('posts').select('id').where('title', '=', 'Notes to self').executeTakeFirstOrThrow();
    expect((await as(alice, '{ me { postsCount posts { id } } }')).body.data).toMatchObject({ me: { postsCount: 2 } });
    expect((await as(alice, q, { id: aliceDraft.id })).body.data).toEqual({ post: { id: aliceDraft.id } });
    expect((await as(bob, q, { id: aliceDraft.id })).body.data).toEqual({ post: null });
  });

  it('a forged token is refused with 401 UNAUTHENTICATED, so the client knows to refresh', async () => {
    const res = await server.gql('{ me { id } }', undefined, { headers: { authorization: `Bearer ${alice.accessToken.slice(0, -4)}AAAA` } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ errors: [{ message: 'Invalid or expired credentials', extensions: { code: 'UNAUTHENTICATED' } }] });
  });
});
