import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/domain/caller.js';
import type { TestServer } from '../helpers/server.js';
import { bearer, signUpAs, startServerAt, uniqueEmail } from './helpers.js';
import { withoutCost } from '../helpers/server.js';

// docs/permissions.md over the wire, one table per operation and one row per role:
// anonymous, user, editor, admin, and the owner of the target. Callers sign in through
// /api/auth/login and call /graphql with their bearer token.

type Role = 'anonymous' | 'user' | 'owner' | 'editor' | 'admin';
type Outcome = 'OK' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND';
const ROLES: Role[] = ['anonymous', 'user', 'owner', 'editor', 'admin'];

interface Actor {
  id: string;
  token: string;
  email: string;
}

let s: TestServer;
let cast: { user: Actor; editor: Actor; editor2: Actor; admin: Actor };
let adminCaller: Caller;

async function actor(role: 'user' | 'editor' | 'admin', name?: string): Promise<Actor> {
  const session = await signUpAs(s, role, name);
  return { id: session.userId, token: session.accessToken, email: session.email };
}

beforeAll(async () => {
  s = await startServerAt();
  cast = { user: await actor('user', 'Bob'), editor: await actor('editor', 'Eddie'), editor2: await actor('editor', 'Edna'), admin: await actor('admin', 'Ada') };
  adminCaller = { kind: 'user', id: cast.admin.id, role: 'admin', sessionId: null };
});
afterAll(async () => {
  await s?.close();
});

async function post(author: Actor, published: boolean): Promise<string> {
  const created = await s.inkwell.services.posts.create(adminCaller, { title: `By ${author.id}`, authorId: author.id, published });
  return created.id;
}

async function run(token: string | undefined, query: string, variables: Record<string, unknown>) {
  const response = await s.gql(query, variables, { headers: token ? bearer(token) : {} });
  expect(response.status).toBe(200);
  return response.body;
}

function outcomeOf(body: { data?: unknown; errors?: { extensions?: { code?: string } }[] }): Outcome | string {
  if (!body.errors) return 'OK';
  return body.errors[0]?.extensions?.code ?? 'NO_CODE';
}

/** One operation: how to build it for a role (the owner is made per case), and what each role gets. */
interface Case {
  name: string;
  query: string;
  setup(role: Role): Promise<{ token: string | undefined; variables: Record<string, unknown> }>;
  expected: Record<Role, Outcome>;
}

const tokenOf = (role: Role): string | undefined => (role === 'anonymous' || role === 'owner' ? undefined : cast[role].token);

const cases: Case[] = [
  {
    name: 'createUser (manage:users)',
    query: 'mutation($e: String!) { createUser(name: "New", email: $e) { id } }',
    async setup(role) {
      const owner = role === 'owner' ? await actor('user') : undefined;
      return { token: owner?.token ?? tokenOf(role), variables: { e: uniqueEmail('created') } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'FORBIDDEN', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'updateUser without role (the user themself or manage:users)',
    query: 'mutation($id: ID!) { updateUser(id: $id, name: "Renamed") { id name } }',
    async setup(role) {
      const target = await actor('user');
      return { token: role === 'owner' ? target.token : tokenOf(role), variables: { id: target.id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'OK', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'updateUser with role (manage:users only, not even the user themself)',
    query: 'mutation($id: ID!) { updateUser(id: $id, role: "admin") { id role } }',
    async setup(role) {
      const target = await actor('user');
      return { token: role === 'owner' ? target.token : tokenOf(role), variables: { id: target.id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'FORBIDDEN', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'deleteUser (the user themself or manage:users)',
    query: 'mutation($id: ID!) { deleteUser(id: $id) }',
    async setup(role) {
      const target = await actor('user');
      return { token: role === 'owner' ? target.token : tokenOf(role), variables: { id: target.id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'OK', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'createPost as oneself (write:posts; owner = an editor writing as themself)',
    query: 'mutation($a: ID!) { createPost(title: "Mine", authorId: $a) { id } }',
    async setup(role) {
      if (role === 'owner') return { token: cast.editor.token, variables: { a: cast.editor.id } };
      if (role === 'anonymous') return { token: undefined, variables: { a: cast.user.id } };
      return { token: cast[role].token, variables: { a: cast[role].id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'OK', editor: 'OK', admin: 'OK' },
  },
  {
    name: "createPost for another author (only admins act for others)",
    query: 'mutation($a: ID!) { createPost(title: "Theirs", authorId: $a) { id } }',
    async setup(role) {
      const owner = role === 'owner' ? await actor('user') : undefined;
      return { token: owner?.token ?? tokenOf(role), variables: { a: cast.editor2.id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'FORBIDDEN', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: "updatePost (write:posts, own post unless admin; owner = the editor who wrote it)",
    query: 'mutation($id: ID!) { updatePost(id: $id, title: "Edited") { id title } }',
    async setup(role) {
      const author = await actor('editor');
      const id = await post(author, true);
      return { token: role === 'owner' ? author.token : tokenOf(role), variables: { id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'OK', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'publishPost of a draft (write:posts, own post unless admin)',
    query: 'mutation($id: ID!) { publishPost(id: $id) { id published } }',
    async setup(role) {
      const author = await actor('editor');
      const id = await post(author, false);
      return { token: role === 'owner' ? author.token : tokenOf(role), variables: { id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'OK', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'updatePost of their own post by a plain user (no write:posts)',
    query: 'mutation($id: ID!) { updatePost(id: $id, title: "Edited") { id } }',
    async setup(role) {
      const author = await actor('user');
      const id = await post(author, true);
      return { token: role === 'owner' ? author.token : tokenOf(role), variables: { id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'FORBIDDEN', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'deletePost (delete:posts: admins only, not even the author)',
    query: 'mutation($id: ID!) { deletePost(id: $id) }',
    async setup(role) {
      const author = await actor('editor');
      const id = await post(author, true);
      return { token: role === 'owner' ? author.token : tokenOf(role), variables: { id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'FORBIDDEN', editor: 'FORBIDDEN', admin: 'OK' },
  },
  {
    name: 'addBook (write:posts)',
    query: 'mutation { addBook(title: "T", author: "A", year: 2000) { id } }',
    async setup(role) {
      const owner = role === 'owner' ? await actor('user') : undefined;
      return { token: owner?.token ?? tokenOf(role), variables: {} };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'FORBIDDEN', owner: 'FORBIDDEN', editor: 'OK', admin: 'OK' },
  },
  {
    name: 'addReaction (any signed-in caller; owner = the author reacting to their own post)',
    query: 'mutation($p: ID!) { addReaction(postId: $p, type: "like") { id } }',
    async setup(role) {
      const author = await actor('user');
      const id = await post(author, true);
      return { token: role === 'owner' ? author.token : tokenOf(role), variables: { p: id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'OK', owner: 'OK', editor: 'OK', admin: 'OK' },
  },
  {
    name: "addReaction on someone else's draft (a post the caller may not see does not exist)",
    query: 'mutation($p: ID!) { addReaction(postId: $p, type: "like") { id } }',
    async setup(role) {
      const author = await actor('user');
      const id = await post(author, false);
      return { token: role === 'owner' ? author.token : tokenOf(role), variables: { p: id } };
    },
    expected: { anonymous: 'UNAUTHENTICATED', user: 'NOT_FOUND', owner: 'OK', editor: 'OK', admin: 'OK' },
  },
];

describe.each(cases)('$name', (c) => {
  it.each(ROLES)('%s', async (role) => {
    const { token, variables } = await c.setup(role);
    const body = await run(token, c.query, variables);
    expect(outcomeOf(body)).toBe(c.expected[role]);
    if (c.expected[role] !== 'OK') expect((body.data as Record<string, unknown> | null) ?? null).toBeNull();
  });
});

describe('reads', () => {
  let author: Actor;
  let draft: string;
  let published: string;
  beforeAll(async () => {
    author = await actor('user', 'Alice');
    draft = await post(author, false);
    published = await post(author, true);
  });

  const readers = (role: Role) => (role === 'owner' ? author.token : tokenOf(role));

  it.each([
    ['anonymous', false],
    ['user', false],
    ['owner', true],
    ['editor', true],
    ['admin', true],
  ] as [Role, boolean][])('an unpublished post is visible to %s: %s (lookup, list and the author\'s posts)', async (role, visible) => {
    const body = await run(readers(role), 'query($id: ID!, $a: ID!) { post(id: $id) { id } posts(limit: 100) { id } user(id: $a) { posts(limit: 100) { id } postsCount } }', {
      id: draft,
      a: author.id,
    });
    expect(body.errors).toBeUndefined();
    const data = body.data as { post: { id: string } | null; posts: { id: string }[]; user: { posts: { id: string }[]; postsCount: number } };
    expect(data.post).toEqual(visible ? { id: draft } : null);
    expect(data.posts.some((p) => p.id === draft)).toBe(visible);
    expect(data.user.posts.some((p) => p.id === draft)).toBe(visible);
    expect(data.user.postsCount).toBe(visible ? 2 : 1);
    expect(data.posts.some((p) => p.id === published)).toBe(true);
  });

  it.each([
    ['anonymous', false],
    ['user', false],
    ['owner', true],
    ['editor', false],
    ['admin', true],
  ] as [Role, boolean][])('User.email is shown to %s: %s (null, not an error, otherwise)', async (role, shown) => {
    const body = await run(readers(role), 'query($id: ID!) { user(id: $id) { id email } users(limit: 100) { id email } }', { id: author.id });
    expect(body.errors).toBeUndefined();
    const data = body.data as { user: { email: string | null }; users: { id: string; email: string | null }[] };
    expect(data.user.email).toBe(shown ? author.email : null);
    expect(data.users.find((u) => u.id === author.id)?.email).toBe(shown ? author.email : null);
  });

  it.each(ROLES)('me for %s', async (role) => {
    const body = await run(readers(role), '{ me { id } }', {});
    const expectedId = role === 'anonymous' ? null : role === 'owner' ? author.id : cast[role].id;
    expect(withoutCost(body)).toEqual({ data: { me: expectedId ? { id: expectedId } : null } });
  });

  it('lookups of unknown ids return null without an error', async () => {
    const body = await run(cast.admin.token, '{ user(id: "nope") { id } post(id: "nope") { id } book(id: "nope") { id } }', {});
    expect(withoutCost(body)).toEqual({ data: { user: null, post: null, book: null } });
  });
});

describe('NOT_FOUND for mutations on records that do not exist (as admin, who may do everything)', () => {
  it.each([
    ['updateUser', 'mutation { updateUser(id: "missing", name: "X") { id } }', 'User not found'],
    ['deleteUser', 'mutation { deleteUser(id: "missing") }', 'User not found'],
    ['updatePost', 'mutation { updatePost(id: "missing", title: "X") { id } }', 'Post not found'],
    ['publishPost', 'mutation { publishPost(id: "missing") { id } }', 'Post not found'],
    ['deletePost', 'mutation { deletePost(id: "missing") }', 'Post not found'],
    ['addReaction', 'mutation { addReaction(postId: "missing", type: "like") { id } }', 'Post not found'],
    ['createPost for a missing author', 'mutation { createPost(title: "X", authorId: "missing") { id } }', 'User not found'],
  ])('%s', async (_name, query, message) => {
    const body = await run(cast.admin.token, query, {});
    expect(body.errors?.[0]).toMatchObject({ message, extensions: { code: 'NOT_FOUND' } });
  });
});

describe('addReaction repeats', () => {
  it('one reaction of a type per user per post: repeating returns the existing one', async () => {
    const id = await post(cast.editor, true);
    const q = 'mutation($p: ID!) { addReaction(postId: $p, type: "like") { id } }';
    const first = await run(cast.user.token, q, { p: id });
    const second = await run(cast.user.token, q, { p: id });
    expect(withoutCost(second)).toEqual(withoutCost(first));
  });
});
