import { NO_READS } from '../../src/cache/reads.js';
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { sql } from 'kysely';
import { ANONYMOUS } from '../../src/domain/caller.js';
import { newId, nowIso } from '../../src/domain/ids.js';
import type { User } from '../../src/domain/types.js';
import { ConflictError } from '../../src/errors.js';
import { channels } from '../../src/realtime/pubsub.js';
import { code, createEnv, flush, makeCast, makePost, onPostgres, record, type TestEnv } from './helpers.js';

let env: TestEnv;
let cast: Awaited<ReturnType<typeof makeCast>>;

beforeEach(async () => {
  env = await createEnv();
  cast = await makeCast(env);
});
afterEach(async () => {
  await env.close();
});

describe('UserService queries', () => {
  it('lists newest first, filters by role, pages', async () => {
    const all = await env.services.users.list(ANONYMOUS, { limit: 100, offset: 0 });
    expect(all.map((u) => u.id)).toEqual([cast.bob, cast.alice, cast.editor2, cast.editor, cast.admin].map((u) => u.id));
    const editors = await env.services.users.list(ANONYMOUS, { role: 'editor', limit: 1, offset: 1 });
    expect(editors.map((u) => u.id)).toEqual([cast.editor.id]);
    await expect(env.services.users.list(ANONYMOUS, { role: 'boss', limit: 10, offset: 0 })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      argument: 'role',
    });
    await expect(env.services.users.list(ANONYMOUS, { limit: 101, offset: 0 })).rejects.toMatchObject({ argument: 'limit' });
  });

  it('byIds answers in input order with one query', async () => {
    const before = env.db.queryCount;
    const found = await env.services.users.byIds([cast.bob.id, 'missing', cast.admin.id, cast.bob.id]);
    expect(env.db.queryCount - before).toBe(1);
    expect(found.map((u) => u?.id)).toEqual([cast.bob.id, undefined, cast.admin.id, cast.bob.id]);
  });

  it('byIds of concurrent callers (two requests’ loaders) share one query, each getting its own users', async () => {
    const before = env.db.queryCount;
    const [one, other] = await Promise.all([
      env.services.users.byIds([cast.bob.id, cast.alice.id]),
      env.services.users.byIds(['missing', cast.admin.id]),
    ]);
    expect(env.db.queryCount - before).toBe(1);
    expect(one.map((u) => u?.id)).toEqual([cast.bob.id, cast.alice.id]);
    expect(other.map((u) => u?.id)).toEqual([undefined, cast.admin.id]);
    // A later caller reads afresh: it sees a change committed after the first statement.
    await env.db.kysely.updateTable('users').set({ name: 'Bobby' }).where('id', '=', cast.bob.id).execute();
    expect((await env.services.users.byIds([cast.bob.id]))[0]?.name).toBe('Bobby');
  });

  it('postsCountByAuthors counts visible posts per author in one query', async () => {
    await makePost(env, cast.alice);
    await makePost(env, cast.alice, { published: false });
    await makePost(env, cast.bob, { published: false });
    await makePost(env, cast.editor);
    const ids = [cast.alice.id, cast.bob.id, cast.editor.id, cast.admin.id];
    const before = env.db.queryCount;
    expect(await env.services.users.postsCountByAuthors(ANONYMOUS, ids, NO_READS)).toEqual([1, 0, 1, 0]);
    expect(env.db.queryCount - before).toBe(1);
    expect(await env.services.users.postsCountByAuthors(cast.as.alice, ids, NO_READS)).toEqual([2, 0, 1, 0]);
    expect(await env.services.users.postsCountByAuthors(cast.as.editor, ids, NO_READS)).toEqual([2, 1, 1, 0]);
    expect(await env.services.users.postsCountByAuthors(cast.as.editor, [], NO_READS)).toEqual([]);
  });

  it('findByEmail normalises and returns the hash; setRole changes the role', async () => {
    await env.services.users.insertAccount({ name: 'Hash', email: 'Hash@Example.test', passwordHash: 'h' });
    const found = await env.services.users.findByEmail('  HASH@example.TEST ');
    expect(found).toMatchObject({ email: 'hash@example.test', passwordHash: 'h', role: 'user' });
    expect(await env.services.users.findByEmail('nobody@example.test')).toBeUndefined();
    expect(await env.services.users.setRole('HASH@example.test', 'admin')).toMatchObject({ role: 'admin' });
    await expect(env.services.users.setRole('nobody@example.test', 'admin')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'User not found',
    });
    await expect(env.services.users.setRole('hash@example.test', 'root')).rejects.toMatchObject({ argument: 'role' });
  });
});

describe('insertAccount', () => {
  it('stores a lower-cased email and publishes userCreated', async () => {
    const sub = record<User>(env.pubsub, channels.userCreated());
    const user = await env.services.users.insertAccount({ name: 'Zed', email: ' Zed@Example.TEST' });
    await flush();
    expect(user).toMatchObject({ name: 'Zed', email: 'zed@example.test', role: 'user', age: null, avatar: null });
    expect(sub.events).toEqual([user]);
    await sub.stop();
  });

  it('accepts an account without email (external sign-in)', async () => {
    const a = await env.services.users.insertAccount({ name: 'No mail', email: null });
    const b = await env.services.users.insertAccount({ name: 'No mail 2', email: null });
    expect([a.email, b.email]).toEqual([null, null]);
  });

  it('refuses a duplicate email with ConflictError', async () => {
    await env.services.users.insertAccount({ name: 'One', email: 'dup@example.test' });
    await expect(env.services.users.insertAccount({ name: 'Two', email: 'DUP@example.test' })).rejects.toBeInstanceOf(
      ConflictError,
    );
  });

  it('lets exactly one of concurrent registrations of one email succeed', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => env.services.users.insertAccount({ name: `R${i}`, email: 'race@example.test' })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(failures).toHaveLength(7);
    for (const f of failures) expect(f.reason).toBeInstanceOf(ConflictError);
  });
});

describe('createUser permissions', () => {
  const input = () => ({ name: 'New', email: `new-${newId()}@example.test` });

  it.each([
    ['anonymous', 'UNAUTHENTICATED'],
    ['alice', 'FORBIDDEN'],
    ['editor', 'FORBIDDEN'],
  ] as const)('%s → %s', async (who, expected) => {
    await expect(env.services.users.create(cast.as[who], input())).rejects.toMatchObject(code(expected));
  });

  it('admin creates, with role and age; a taken email is BAD_USER_INPUT on email', async () => {
    const sub = record<User>(env.pubsub, channels.userCreated());
    const user = await env.services.users.create(cast.as.admin, { name: 'Ed', email: 'ed@example.test', age: 30, role: 'editor' });
    expect(user).toMatchObject({ role: 'editor', age: 30 });
    await expect(env.services.users.create(cast.as.admin, { name: 'Ed2', email: 'ED@example.test' })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      argument: 'email',
    });
    await expect(env.services.users.create(cast.as.admin, { ...input(), role: 'god' })).rejects.toMatchObject({ argument: 'role' });
    await expect(env.services.users.create(cast.as.admin, { ...input(), age: 200 })).rejects.toMatchObject({ argument: 'age' });
    await flush();
    expect(sub.events.map((u) => u.id)).toEqual([user.id]);
    await sub.stop();
  });
});

describe('updateUser', () => {
  it.each([
    ['anonymous', 'UNAUTHENTICATED'],
    ['bob', 'FORBIDDEN'],
    ['editor', 'FORBIDDEN'],
  ] as const)('%s on alice → %s', async (who, expected) => {
    await expect(env.services.users.update(cast.as[who], cast.alice.id, { name: 'X' })).rejects.toMatchObject(code(expected));
  });

  it('the user themself updates fields but not the role', async () => {
    const updated = await env.services.users.update(cast.as.alice, cast.alice.id, {
      name: 'Alice B',
      email: 'Alice.B@Example.test',
      age: 33,
      avatar: 'https://example.test/a.png',
    });
    expect(updated).toMatchObject({ name: 'Alice B', email: 'alice.b@example.test', age: 33, avatar: 'https://example.test/a.png' });
    await expect(env.services.users.update(cast.as.alice, cast.alice.id, { role: 'admin' })).rejects.toMatchObject(
      code('FORBIDDEN'),
    );
  });

  it('null clears age and avatar, is refused for name/email/role, undefined leaves unchanged', async () => {
    await env.services.users.update(cast.as.alice, cast.alice.id, { age: 20, avatar: 'http://e.test/x' });
    const cleared = await env.services.users.update(cast.as.alice, cast.alice.id, { age: null, avatar: null });
    expect(cleared).toMatchObject({ age: null, avatar: null, name: cast.alice.name });
    for (const field of ['name', 'email'] as const) {
      await expect(env.services.users.update(cast.as.alice, cast.alice.id, { [field]: null })).rejects.toMatchObject({
        code: 'BAD_USER_INPUT',
        argument: field,
      });
    }
    await expect(env.services.users.update(cast.as.admin, cast.alice.id, { role: null })).rejects.toMatchObject({ argument: 'role' });
    expect(await env.services.users.update(cast.as.alice, cast.alice.id, {})).toMatchObject({ id: cast.alice.id });
  });

  it('an admin changes the role; a taken email is BAD_USER_INPUT; a missing user is NOT_FOUND', async () => {
    expect(await env.services.users.update(cast.as.admin, cast.alice.id, { role: 'editor' })).toMatchObject({ role: 'editor' });
    await expect(env.services.users.update(cast.as.admin, cast.alice.id, { email: cast.bob.email })).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      argument: 'email',
    });
    await expect(env.services.users.update(cast.as.admin, 'missing', { name: 'X' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'User not found',
    });
    await expect(env.services.users.update(cast.as.admin, cast.alice.id, { avatar: 'ftp://x.test/a' })).rejects.toMatchObject({
      argument: 'avatar',
    });
  });
});

describe('deleteUser', () => {
  it.each([
    ['anonymous', 'UNAUTHENTICATED'],
    ['bob', 'FORBIDDEN'],
    ['editor', 'FORBIDDEN'],
  ] as const)('%s on alice → %s', async (who, expected) => {
    await expect(env.services.users.delete(cast.as[who], cast.alice.id)).rejects.toMatchObject(code(expected));
  });

  it('NOT_FOUND for a missing user', async () => {
    await expect(env.services.users.delete(cast.as.admin, 'missing')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'User not found',
    });
  });

  it('self-delete removes posts, reactions, sessions, tokens, external accounts; invalidates cached posts', async () => {
    const k = env.db.kysely;
    const own = await makePost(env, cast.alice);
    const bobs = await makePost(env, cast.bob);
    await env.services.reactions.add(cast.as.bob, own.id, 'like'); // on alice's post
    await env.services.reactions.add(cast.as.alice, bobs.id, 'like'); // alice's reaction elsewhere
    await env.services.reactions.add(cast.as.bob, bobs.id, 'like');
    const now = nowIso();
    await k.insertInto('sessions').values({ id: 's1', user_id: cast.alice.id, created_at: now, expires_at: now, revoked_at: null }).execute();
    await k.insertInto('refresh_tokens').values({ token_hash: 'h1', session_id: 's1', created_at: now, expires_at: now, rotated_at: null }).execute();
    await k.insertInto('oauth_accounts').values({ provider: 'p', provider_account_id: 'a', user_id: cast.alice.id, created_at: now }).execute();

    // Warm the cache: bob's post has 2 likes, alice's post exists.
    expect((await env.services.posts.byIdWithLikes(ANONYMOUS, bobs.id, NO_READS))?.likes).toBe(2);
    expect(await env.services.posts.byId(ANONYMOUS, own.id, NO_READS)).not.toBeNull();

    expect(await env.services.users.delete(cast.as.alice, cast.alice.id)).toBe(true);

    expect(await k.selectFrom('users').select('id').where('id', '=', cast.alice.id).execute()).toEqual([]);
    expect(await k.selectFrom('posts').select('id').where('author_id', '=', cast.alice.id).execute()).toEqual([]);
    expect(await k.selectFrom('reactions').select('id').where('user_id', '=', cast.alice.id).execute()).toEqual([]);
    expect(await k.selectFrom('reactions').select('id').where('post_id', '=', own.id).execute()).toEqual([]);
    expect(await k.selectFrom('sessions').select('id').execute()).toEqual([]);
    expect(await k.selectFrom('refresh_tokens').select('token_hash').execute()).toEqual([]);
    expect(await k.selectFrom('oauth_accounts').select('user_id').execute()).toEqual([]);

    expect(await env.services.posts.byId(ANONYMOUS, own.id, NO_READS)).toBeNull();
    expect((await env.services.posts.byIdWithLikes(ANONYMOUS, bobs.id, NO_READS))?.likes).toBe(1);
  });

  it('an admin deletes another user', async () => {
    expect(await env.services.users.delete(cast.as.admin, cast.bob.id)).toBe(true);
    expect(await env.services.users.byIds([cast.bob.id])).toEqual([undefined]);
  });

  // Switching foreign keys off is a SQLite pragma; the explicit deletes are the same on both.
  it.skipIf(onPostgres)('works without ON DELETE CASCADE (explicit deletes)', async () => {
    await sql`PRAGMA foreign_keys = OFF`.execute(env.db.kysely);
    const post = await makePost(env, cast.alice);
    await env.services.reactions.add(cast.as.bob, post.id, 'like');
    await env.services.users.delete(cast.as.admin, cast.alice.id);
    expect(await env.db.kysely.selectFrom('reactions').select('id').execute()).toEqual([]);
    expect(await env.db.kysely.selectFrom('posts').select('id').execute()).toEqual([]);
  });
});
