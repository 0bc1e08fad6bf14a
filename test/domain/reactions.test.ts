import { NO_READS } from '../../src/cache/reads.js';
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import type { Reaction } from '../../src/domain/types.js';
import { channels } from '../../src/realtime/pubsub.js';
import { code, createEnv, flush, makeCast, makePost, record, tick, type TestEnv } from './helpers.js';

let env: TestEnv;
let cast: Awaited<ReturnType<typeof makeCast>>;

beforeEach(async () => {
  env = await createEnv();
  cast = await makeCast(env);
});
afterEach(async () => {
  await env.close();
});

describe('addReaction', () => {
  it('needs a signed-in caller', async () => {
    const post = await makePost(env, cast.editor);
    await expect(env.services.reactions.add(cast.as.anonymous, post.id, 'like')).rejects.toMatchObject(
      code('UNAUTHENTICATED'),
    );
  });

  it.each(['alice', 'editor', 'admin'] as const)('%s may react', async (who) => {
    const post = await makePost(env, cast.editor);
    expect(await env.services.reactions.add(cast.as[who], post.id, 'like')).toMatchObject({
      postId: post.id,
      userId: cast[who].id,
      type: 'like',
    });
  });

  it('NOT_FOUND for a missing post and for a draft the caller cannot see; no event', async () => {
    const draft = await makePost(env, cast.editor, { published: false });
    const sub = record<Reaction>(env.pubsub, channels.postReactionAdded(draft.id));
    const notFound = { code: 'NOT_FOUND', message: 'Post not found' };
    await expect(env.services.reactions.add(cast.as.alice, 'missing', 'like')).rejects.toMatchObject(notFound);
    await expect(env.services.reactions.add(cast.as.alice, draft.id, 'like')).rejects.toMatchObject(notFound);
    // The author and editors can see it, so they may react.
    await env.services.reactions.add(cast.as.editor, draft.id, 'like');
    await flush();
    expect(sub.events.map((r) => r.userId)).toEqual([cast.editor.id]);
    await sub.stop();
  });

  it('refuses a malformed type', async () => {
    const post = await makePost(env, cast.editor);
    await expect(env.services.reactions.add(cast.as.alice, post.id, 'Thumbs Up')).rejects.toMatchObject({
      code: 'BAD_USER_INPUT',
      argument: 'type',
    });
  });

  it('a repeated reaction returns the existing one without a second event', async () => {
    const post = await makePost(env, cast.editor);
    const sub = record<Reaction>(env.pubsub, channels.postReactionAdded(post.id));
    const first = await env.services.reactions.add(cast.as.alice, post.id, 'like');
    const again = await env.services.reactions.add(cast.as.alice, post.id, 'like');
    const other = await env.services.reactions.add(cast.as.alice, post.id, 'love');
    expect(again).toEqual(first);
    expect(other.id).not.toBe(first.id);
    await flush();
    expect(sub.events.map((r) => r.id)).toEqual([first.id, other.id]);
    await sub.stop();
  });

  it('concurrent identical reactions store one row and all return it', async () => {
    const post = await makePost(env, cast.editor);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => env.services.reactions.add(cast.as.bob, post.id, 'like')),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(await env.services.posts.likesByPostIds([post.id], NO_READS)).toEqual([1]);
  });

  it('events go to the reacted post channel only', async () => {
    const p1 = await makePost(env, cast.editor);
    const p2 = await makePost(env, cast.editor);
    const s1 = record<Reaction>(env.pubsub, channels.postReactionAdded(p1.id));
    const s2 = record<Reaction>(env.pubsub, channels.postReactionAdded(p2.id));
    const r = await env.services.reactions.add(cast.as.alice, p1.id, 'like');
    await flush();
    expect(s1.events).toEqual([r]);
    expect(s2.events).toEqual([]);
    await s1.stop();
    await s2.stop();
  });
});

describe('byPosts', () => {
  it('pages each post newest first in one query', async () => {
    const p1 = await makePost(env, cast.editor);
    const p2 = await makePost(env, cast.editor);
    const made: string[] = [];
    for (const type of ['a', 'b', 'c', 'd']) {
      await tick();
      made.push((await env.services.reactions.add(cast.as.alice, p1.id, type)).type);
    }
    await env.services.reactions.add(cast.as.bob, p2.id, 'like');
    const before = env.db.queryCount;
    const pages = await env.services.reactions.byPosts([p1.id, p2.id, 'missing'], { limit: 2, offset: 1 }, NO_READS);
    expect(env.db.queryCount - before).toBe(1);
    expect(pages.map((rs) => rs.map((r) => r.type))).toEqual([['c', 'b'], [], []]);
    const all = await env.services.reactions.byPosts([p2.id, p1.id], { limit: 20, offset: 0 }, NO_READS);
    expect(all.map((rs) => rs.map((r) => r.type))).toEqual([['like'], ['d', 'c', 'b', 'a']]);
    const ids = all.flat().map((r) => r.id);
    expect((await env.services.reactions.byIds([...ids, 'x'])).map((r) => r?.id)).toEqual([...ids, undefined]);
  });

  it('pages a post with many reactions by time, ties broken by id, each caller its own page', async () => {
    const post = await makePost(env, cast.editor);
    const rows = Array.from({ length: 40 }, (_, i) => {
      const id = `many-${String(i).padStart(2, '0')}`;
      // Ten share the newest time; the rest are older, one second apart.
      const created = i < 10 ? '2030-01-01T00:00:00.000Z' : `2029-01-01T00:00:${String(i).padStart(2, '0')}.000Z`;
      return { id, post_id: post.id, user_id: cast.alice.id, type: id, created_at: created };
    });
    await env.db.domain.insertInto('reactions').values(rows).execute();
    const newestFirst = [...rows].sort((x, y) => y.created_at.localeCompare(x.created_at) || y.id.localeCompare(x.id)).map((r) => r.id);
    const [first, second, whole] = await Promise.all([
      env.services.reactions.byPosts([post.id], { limit: 5, offset: 3 }, NO_READS),
      env.services.reactions.byPosts(['missing', post.id], { limit: 5, offset: 8 }, NO_READS),
      env.services.reactions.byPosts([post.id], { limit: 100, offset: 0 }, NO_READS),
    ]);
    expect(first.map((list) => list.map((r) => r.id))).toEqual([newestFirst.slice(3, 8)]);
    expect(second.map((list) => list.map((r) => r.id))).toEqual([[], newestFirst.slice(8, 13)]);
    expect(whole[0]!.map((r) => r.id)).toEqual(newestFirst);
  });
});
