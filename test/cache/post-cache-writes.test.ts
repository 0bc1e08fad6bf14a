import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type SignedIn } from '../helpers/auth.js';
import { startServer, type TestServer, withoutCost } from '../helpers/server.js';

/**
 * docs/schema.md ("Caching"): `post(id)` is cached for up to 300 s and is never stale after a write
 * that changes the post or its reactions. Every write here goes over the wire with a
 * signed-in demo account; every read right after it must show the write, though the
 * entry was cached just before.
 */
let server: TestServer;
let admin: SignedIn;
let editor: SignedIn;
let alice: SignedIn;
let bob: SignedIn;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  admin = await signIn(server, 'admin@inkwell.test');
  editor = await signIn(server, 'editor@inkwell.test');
  alice = await signIn(server, 'alice@inkwell.test');
  bob = await signIn(server, 'bob@inkwell.test');
});
afterAll(() => server.close());

/** Everything the cache entry holds: an anonymous read of these fields costs no SQL on a hit. */
const lookup = 'query ($id: ID!) { post(id: $id) { id title content tags published likes } }';

/**
 * Reads post(id) twice anonymously; the second read proves the entry is cached (no SQL).
 * Then, when `who` is given, reads it as `who` from that entry (signed-in requests also
 * look up their session, so only the anonymous read can show zero statements).
 */
async function readCached(id: string, who?: SignedIn) {
  const first = await server.gql(lookup, { id });
  const before = server.inkwell.backends.db.queryCount;
  const second = await server.gql(lookup, { id });
  expect(server.inkwell.backends.db.queryCount - before).toBe(0);
  expect(withoutCost(second.body)).toEqual(withoutCost(first.body));
  if (!who) return (second.body.data as { post: any }).post;
  return read(id, who);
}

async function reactionTypes(id: string): Promise<string[]> {
  const res = await server.gql('query ($id: ID!) { post(id: $id) { reactions(limit: 100) { type } } }', { id });
  return (res.body.data as any).post.reactions.map((r: { type: string }) => r.type);
}

async function read(id: string, who?: SignedIn) {
  const res = await server.gql(lookup, { id }, who ? { headers: who.headers } : {});
  expect(res.body.errors).toBeUndefined();
  return (res.body.data as { post: any }).post;
}

async function write(who: SignedIn, mutation: string, variables: Record<string, unknown>) {
  const res = await server.gql(mutation, variables, { headers: who.headers });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data as any;
}

async function postId(title: string) {
  return (await server.inkwell.backends.db.kysely.selectFrom('posts').select('id').where('title', '=', title).executeTakeFirstOrThrow()).id;
}

describe('post(id) is never stale after a write', () => {
  it('updatePost: title, content and tags', async () => {
    const id = await postId('How we choose what to publish');
    expect((await readCached(id)).title).toBe('How we choose what to publish');
    await write(editor, 'mutation ($id: ID!) { updatePost(id: $id, title: "Renamed", tags: ["x"], content: null) { id } }', { id });
    expect(await read(id)).toMatchObject({ title: 'Renamed', tags: ['x'], content: null });
  });

  it('updatePost, many times in a row, each read showing the latest write', async () => {
    const id = await postId('Welcome to Inkwell');
    for (let i = 0; i < 15; i++) {
      await readCached(id);
      await write(editor, 'mutation ($id: ID!, $t: String!) { updatePost(id: $id, title: $t) { id } }', { id, t: `Version ${i}` });
      expect((await read(id)).title).toBe(`Version ${i}`);
    }
  });

  it('publishPost: an anonymous reader sees the post at once', async () => {
    const id = await postId('Upcoming: interviews with authors');
    expect(await readCached(id)).toBeNull();
    expect((await readCached(id, editor)).published).toBe(false);
    await write(editor, 'mutation ($id: ID!) { publishPost(id: $id) { published } }', { id });
    expect(await read(id)).toMatchObject({ id, published: true });
    expect((await read(id, editor)).published).toBe(true);
  });

  it('addReaction: likes and reactions change at once; a repeated reaction changes nothing', async () => {
    const id = await postId('Poetry in orbit');
    const before = await readCached(id);
    const typesBefore = await reactionTypes(id);
    await write(bob, 'mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }', { id });
    const after = await read(id);
    expect(after.likes).toBe(before.likes + 1);
    expect(await reactionTypes(id)).toEqual(['like', ...typesBefore]);
    await readCached(id);
    await write(bob, 'mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }', { id });
    expect((await read(id)).likes).toBe(after.likes);
    await readCached(id);
    await write(alice, 'mutation ($id: ID!) { addReaction(postId: $id, type: "wow") { id } }', { id });
    expect((await read(id)).likes).toBe(after.likes); // only "like" counts
    expect(await reactionTypes(id)).toEqual(['wow', 'like', ...typesBefore]);
  });

  it('deletePost: the lookup answers null at once', async () => {
    const id = await postId('On building bookshelves');
    expect(await readCached(id)).not.toBeNull();
    expect(await write(admin, 'mutation ($id: ID!) { deletePost(id: $id) }', { id })).toEqual({ deletePost: true });
    expect(await read(id)).toBeNull();
    expect(await read(id, admin)).toBeNull();
  });

  it('deleteUser: posts they liked lose the like at once', async () => {
    const id = await postId('Down the rabbit hole of GraphQL'); // liked by Eddie Editor
    const before = await readCached(id);
    await write(admin, 'mutation ($id: ID!) { deleteUser(id: $id) }', { id: editor.user.id });
    expect((await read(id)).likes).toBe(before.likes - 1);
  });

  it('a refused write leaves the cached post as it was', async () => {
    const id = await postId('Open the pod bay doors: a review');
    const before = await readCached(id);
    const res = await server.gql('mutation ($id: ID!) { updatePost(id: $id, title: "") { id } }', { id }, { headers: admin.headers });
    expect(res.body.errors![0]!.extensions?.code).toBe('BAD_USER_INPUT');
    expect(await read(id)).toEqual(before);
  });
});
