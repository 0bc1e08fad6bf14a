import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { ANONYMOUS } from '../../src/domain/caller.js';
import { EntityCache } from '../../src/cache/entity-cache.js';
import { postKind } from '../../src/domain/post-cache.js';
import { loadPostsWithLikes } from '../../src/domain/post-queries.js';
import { NO_READS, tags } from '../../src/cache/reads.js';
import type { KeyValueStore } from '../../src/store/kv.js';
import { SharedVersions } from '../../src/cache/versions.js';
import { createEnv, makeCast, makePost, type TestEnv } from '../domain/helpers.js';

let env: TestEnv;
let cast: Awaited<ReturnType<typeof makeCast>>;

beforeEach(async () => {
  env = await createEnv();
  cast = await makeCast(env);
});
afterEach(async () => {
  await env.close();
});

/** Database statements a call costs. */
async function queries<T>(run: () => Promise<T>): Promise<[T, number]> {
  const before = env.db.queryCount;
  const value = await run();
  return [value, env.db.queryCount - before];
}

const read = (id: string) => env.services.posts.byIdWithLikes(cast.as.admin, id, NO_READS);

describe('post cache', () => {
  it('serves a repeated read, with its like count, without a query', async () => {
    const post = await makePost(env, cast.editor);
    await env.services.reactions.add(cast.as.alice, post.id, 'like');
    const [first, cold] = await queries(() => read(post.id));
    const [second, warm] = await queries(() => read(post.id));
    expect(cold).toBe(1);
    expect(warm).toBe(0);
    expect(second).toEqual(first);
    expect(second?.likes).toBe(1);
  });

  it('reads a batch with one statement for its missing and old entries only, in input order', async () => {
    const [a, b, c] = [await makePost(env, cast.editor), await makePost(env, cast.alice), await makePost(env, cast.editor)];
    const draft = await makePost(env, cast.editor, { published: false });
    await read(a.id);
    await read(b.id);
    await env.services.reactions.add(cast.as.alice, b.id, 'like'); // b's entry is old now
    const ids = [c.id, 'missing-post', b.id, draft.id, a.id, c.id];
    const [found, statements] = await queries(() => env.services.posts.byIdsWithLikes(cast.as.alice, ids, NO_READS));
    expect(statements).toBe(1);
    expect(found.map((entry) => entry?.post.id ?? null)).toEqual([c.id, null, b.id, null, a.id, c.id]);
    expect(found[2]?.likes).toBe(1);
    // The statement refilled c, b and the draft: all served from the cache now (a missing
    // post is not cached, so it alone would cost a statement again).
    const existing = ids.filter((id) => id !== 'missing-post');
    const [again, none] = await queries(() => env.services.posts.byIdsWithLikes(cast.as.editor, existing, NO_READS));
    expect(none).toBe(0);
    expect(again.map((entry) => entry?.post.id ?? null)).toEqual([c.id, b.id, draft.id, a.id, c.id]);
  });

  it('applies visibility after the cache: a cached draft stays hidden from others', async () => {
    const draft = await makePost(env, cast.editor, { published: false });
    expect(await read(draft.id)).not.toBeNull();
    expect(await env.services.posts.byId(ANONYMOUS, draft.id, NO_READS)).toBeNull();
    expect(await env.services.posts.byId(cast.as.alice, draft.id, NO_READS)).toBeNull();
  });

  it('is never stale after updatePost, publishPost, addReaction, deletePost', async () => {
    const post = await makePost(env, cast.editor, { published: false });
    await read(post.id);

    await env.services.posts.update(cast.as.editor, post.id, { title: 'Changed' });
    expect((await read(post.id))?.post.title).toBe('Changed');

    await env.services.posts.publish(cast.as.editor, post.id);
    expect((await read(post.id))?.post.published).toBe(true);
    expect(await env.services.posts.byId(ANONYMOUS, post.id, NO_READS)).not.toBeNull();

    await env.services.reactions.add(cast.as.alice, post.id, 'like');
    expect((await read(post.id))?.likes).toBe(1);
    await env.services.reactions.add(cast.as.bob, post.id, 'love');
    expect((await read(post.id))?.likes).toBe(1);

    await env.services.posts.delete(cast.as.admin, post.id);
    expect(await read(post.id)).toBeNull();
  });

  it('a read that began before a write cannot leave a stale entry', async () => {
    const post = await makePost(env, cast.editor);
    const cache = env.services.postCache;
    // The reader takes the versions before the write...
    const versionsBefore = await cache.currentVersions(post.id);
    expect(versionsBefore).toBeDefined();
    const staleRows = await loadPostsWithLikes(env.db, [post.id]);
    // ...the write commits and bumps the post's tag...
    await env.services.posts.update(cast.as.editor, post.id, { title: 'After' });
    // ...then the slow reader stores what it read under the versions it saw.
    const stalePostCache = new EntityCache(env.kv, env.versions, postKind(async () => staleRows));
    await stalePostCache.readThrough(new Map([[post.id, versionsBefore!]]));
    // The entry is there, but under old versions, so no one accepts it.
    expect(await env.kv.get(`post:${post.id}`)).toContain('"title":"' + post.title + '"');
    expect((await cache.get(post.id))?.post.title).toBe('After');
    // And the fresh read replaced it: served from the cache now.
    const [again, n] = await queries(() => cache.get(post.id));
    expect(again?.post.title).toBe('After');
    expect(n).toBe(0);
  });

  it('a reaction invalidates the entry through the reactions tag: likes are never stale', async () => {
    const post = await makePost(env, cast.editor);
    expect((await read(post.id))?.likes).toBe(0);
    const [, cached] = await queries(() => read(post.id));
    expect(cached).toBe(0);
    await env.services.reactions.add(cast.as.alice, post.id, 'like');
    const [after, statements] = await queries(() => read(post.id));
    expect(after?.likes).toBe(1);
    expect(statements).toBe(1);
  });

  it('with shared versions (Redis): a lost version key (expired or evicted) never revives a stale entry', async () => {
    const post = await makePost(env, cast.editor);
    // SharedVersions over the in-memory store: the same code as over Redis.
    const versions = new SharedVersions(env.kv, () => {});
    const cache = new EntityCache(env.kv, versions, postKind((ids) => loadPostsWithLikes(env.db, ids)));
    await cache.get(post.id); // claims versions and caches the row
    const versionsBefore = await cache.currentVersions(post.id);
    expect(versionsBefore).toHaveLength(3);
    const staleRows = await loadPostsWithLikes(env.db, [post.id]);
    await env.db.domain.updateTable('posts').set({ title: 'Newer' }).where('id', '=', post.id).execute();
    await versions.bump([tags.post(post.id)]);
    await new EntityCache(env.kv, versions, postKind(async () => staleRows)).readThrough(new Map([[post.id, versionsBefore!]]));
    // The store drops the version key (LRU eviction, Redis maxmemory, TTL).
    await env.kv.delete(`v:${tags.post(post.id)}`);
    expect((await cache.get(post.id))?.post.title).toBe('Newer');
    expect((await cache.get(post.id))?.post.title).toBe('Newer');
  });

  it('is bypassed, not fatal, when the store fails', async () => {
    const post = await makePost(env, cast.editor);
    const broken: KeyValueStore = {
      get: () => Promise.reject(new Error('down')),
      getMany: () => Promise.reject(new Error('down')),
      set: () => Promise.reject(new Error('down')),
      delete: () => Promise.reject(new Error('down')),
      incr: () => Promise.reject(new Error('down')),
      setIfAbsent: () => Promise.reject(new Error('down')),
      close: () => Promise.resolve(),
    };
    const errors: unknown[] = [];
    const versions = new SharedVersions(broken, (err) => errors.push(err));
    const cache = new EntityCache(broken, versions, postKind((ids) => loadPostsWithLikes(env.db, ids)), (err: unknown) => errors.push(err));
    expect((await cache.get(post.id))?.post.id).toBe(post.id);
    expect(await cache.currentVersions(post.id)).toBeUndefined();
    await versions.bump([tags.post(post.id)]);
    expect(errors.length).toBeGreaterThan(0);
  });

  it('ignores a corrupt entry', async () => {
    const post = await makePost(env, cast.editor);
    await env.kv.set(`post:${post.id}`, '{not json', 300_000);
    expect((await read(post.id))?.post.id).toBe(post.id);
  });
});
