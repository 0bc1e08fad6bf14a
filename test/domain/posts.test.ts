import { NO_READS } from '../../src/cache/reads.js';
import type { Audience } from '../../src/cache/sharing.js';
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { ANONYMOUS } from '../../src/domain/caller.js';
import type { Post } from '../../src/domain/types.js';
import { channels } from '../../src/realtime/pubsub.js';
import { callerOf, code, createEnv, flush, makeCast, makePost, makeUser, record, type TestEnv } from './helpers.js';

let env: TestEnv;
let cast: Awaited<ReturnType<typeof makeCast>>;

beforeEach(async () => {
  env = await createEnv();
  cast = await makeCast(env);
});
afterEach(async () => {
  await env.close();
});

describe('visibility of unpublished posts', () => {
  it('only the author, editors and admins see a draft', async () => {
    const draft = await makePost(env, cast.alice, { published: false });
    const pub = await makePost(env, cast.alice);
    const expectations = [
      ['anonymous', false],
      ['bob', false],
      ['alice', true],
      ['editor', true],
      ['admin', true],
    ] as const;
    for (const [who, sees] of expectations) {
      const caller = cast.as[who];
      expect((await env.services.posts.byId(caller, draft.id, NO_READS))?.id, who).toBe(sees ? draft.id : undefined);
      const listed = (await env.services.posts.list(caller, { limit: 100, offset: 0 }, NO_READS)).map((p) => p.id);
      expect(listed, who).toEqual(sees ? [pub.id, draft.id] : [pub.id]);
      const byAuthor = (await env.services.posts.byAuthors(caller, [cast.alice.id], { limit: 10, offset: 0 }, NO_READS))[0];
      expect(byAuthor?.map((p) => p.id), who).toEqual(sees ? [pub.id, draft.id] : [pub.id]);
    }
    expect(await env.services.posts.byId(ANONYMOUS, 'missing', NO_READS)).toBeNull();
  });
});

describe('the posts list', () => {
  it('pages each caller’s view, wherever the drafts sit, for every limit and offset', async () => {
    // Oldest first: drafts deep in the list, in the middle and among the newest.
    const plan: ['alice' | 'bob', boolean][] = [
      ['alice', false], ['bob', true], ['alice', true], ['bob', true], ['alice', true],
      ['bob', false], ['alice', true], ['bob', true], ['alice', true], ['bob', true],
    ];
    const made: Post[] = [];
    for (const [who, published] of plan) made.push(await makePost(env, cast[who], { published }));
    const newestFirst = made.reverse();
    // A reader with no drafts of their own.
    const carol = await makeUser(env, 'user');
    const callers = { ...cast.as, carol: callerOf(carol) };
    const authors = { ...cast, carol };
    const answers = async (published: boolean) => {
      for (const who of ['anonymous', 'bob', 'alice', 'carol', 'editor'] as const) {
        const caller = callers[who];
        const visible = newestFirst.filter((p) => p.published || who === 'editor' || (who !== 'anonymous' && p.authorId === authors[who].id));
        for (const [limit, offset] of [[1, 0], [2, 0], [3, 1], [4, 3], [10, 0], [2, 7], [5, 20]] as const) {
          const listed = (await env.services.posts.list(caller, { limit, offset }, NO_READS)).map((p) => p.id);
          expect(listed, `${who} ${limit}/${offset} ${published}`).toEqual(visible.slice(offset, offset + limit).map((p) => p.id));
        }
      }
    };
    await answers(false);
    // The newest post a draft: every page's answer now depends on the caller.
    newestFirst.unshift(await makePost(env, cast.bob, { published: false }));
    await answers(true);
  });

  it('a reader’s draft newer than the page’s last published post is on their page, however many drafts are newer still', async () => {
    // Newest first: three of Alice's drafts, a published post, Bob's draft, two published posts.
    const published = [await makePost(env, cast.editor)];
    published.unshift(await makePost(env, cast.editor));
    const bobs = await makePost(env, cast.bob, { published: false });
    published.unshift(await makePost(env, cast.editor));
    for (let i = 0; i < 3; i++) await makePost(env, cast.alice, { published: false });
    const page = { limit: 2, offset: 0 };
    expect((await env.services.posts.list(cast.as.bob, page, NO_READS)).map((p) => p.id)).toEqual([published[0]!.id, bobs.id]);
    expect((await env.services.posts.list(cast.as.anonymous, page, NO_READS)).map((p) => p.id)).toEqual([published[0]!.id, published[1]!.id]);
  });

  it('a reader with no draft newer than the page’s end reads the published page, kept for every reader but the drafts’ authors', async () => {
    await makePost(env, cast.editor);
    await makePost(env, cast.alice, { published: false });
    await makePost(env, cast.editor);
    const carol = await makeUser(env, 'user');
    const said: string[] = [];
    const audience: Audience = {
      dependsOnRole: () => said.push('role'),
      dependsOnNotBeing: (id) => said.push(`not ${id}`),
      dependsOnIdentity: () => said.push('identity'),
    };
    const asCarol = await env.services.posts.list({ ...callerOf(carol), audience }, { limit: 2, offset: 0 }, NO_READS);
    expect(asCarol.every((p) => p.published)).toBe(true);
    expect([...new Set(said)]).toEqual(['role', `not ${cast.alice.id}`]);
    said.length = 0;
    const asAlice = await env.services.posts.list({ ...cast.as.alice, audience }, { limit: 2, offset: 0 }, NO_READS);
    expect(asAlice.some((p) => !p.published)).toBe(true);
    expect(said).toContain('identity');
  });

  it('byAuthors pages each caller’s view of each author, wherever the drafts sit', async () => {
    const plan: ['alice' | 'bob', boolean][] = [
      ['alice', false], ['bob', true], ['alice', true], ['bob', false], ['alice', true], ['alice', false],
      ['bob', true], ['alice', true], ['bob', false], ['alice', true], ['bob', true], ['alice', false],
    ];
    const made: Post[] = [];
    for (const [who, published] of plan) made.push(await makePost(env, cast[who], { published }));
    const newestFirst = made.reverse();
    const authors = [cast.alice.id, cast.bob.id, cast.editor.id, cast.bob.id];
    for (const who of ['anonymous', 'bob', 'alice', 'editor'] as const) {
      const caller = cast.as[who];
      for (const [limit, offset] of [[1, 0], [2, 0], [2, 1], [3, 2], [10, 0], [2, 5], [4, 9]] as const) {
        const pages = await env.services.posts.byAuthors(caller, authors, { limit, offset }, NO_READS);
        const expected = authors.map((author) =>
          newestFirst
            .filter((p) => p.authorId === author && (p.published || who === 'editor' || (who !== 'anonymous' && cast[who].id === author)))
            .slice(offset, offset + limit)
            .map((p) => p.id),
        );
        expect(pages.map((page) => page.map((p) => p.id)), `${who} ${limit}/${offset}`).toEqual(expected);
      }
    }
  });

  it('byAuthors as listings: the same pages, without content or tags', async () => {
    for (const [i, published] of [true, false, true, true].entries()) await makePost(env, cast.alice, { published, content: `c${i}`, tags: ['t'] });
    for (const who of ['anonymous', 'alice'] as const) {
      const args = [cast.as[who], [cast.alice.id, cast.bob.id], { limit: 3, offset: 0 }, NO_READS] as const;
      const [whole, listed] = await Promise.all([env.services.posts.byAuthors(...args), env.services.posts.byAuthors(...args, 'listing')]);
      expect(whole[0]!.map((p) => [p.content, p.tags])).toEqual(whole[0]!.map(() => [expect.stringMatching(/^c\d$/), ['t']]));
      expect(listed, who).toEqual(whole.map((page) => page.map(({ content: _c, tags: _t, ...listing }) => listing)));
      for (const post of listed.flat()) expect(Object.keys(post).sort()).toEqual(['authorId', 'createdAt', 'id', 'published', 'title']);
    }
  });

  it('an anonymous page takes one statement, a draft among the newest or not', async () => {
    await makePost(env, cast.alice);
    await makePost(env, cast.alice);
    const statements = async () => {
      const before = env.db.queryCount;
      await env.services.posts.list(ANONYMOUS, { limit: 2, offset: 0 }, NO_READS);
      return env.db.queryCount - before;
    };
    expect(await statements()).toBe(1);
    await makePost(env, cast.alice, { published: false });
    expect(await statements()).toBe(1);
  });

  it('concurrent callers asking for the same page share its statement', async () => {
    await makePost(env, cast.alice);
    const before = env.db.queryCount;
    const pages = await Promise.all([0, 1, 2].map(() => env.services.posts.list(ANONYMOUS, { limit: 5, offset: 0 }, NO_READS)));
    expect(env.db.queryCount - before).toBe(1);
    expect(pages[1]).toEqual(pages[0]);
    expect(pages[2]).not.toBe(pages[0]);
  });
});

describe('batched reads', () => {
  it('concurrent byAuthors and reactions callers share one statement per page size, each getting only its own', async () => {
    const alices = [await makePost(env, cast.alice, { title: 'a0' }), await makePost(env, cast.alice, { title: 'a1' })];
    const bobs = await makePost(env, cast.bob, { title: 'b0' });
    const draft = await makePost(env, cast.bob, { title: 'b1', published: false });
    await env.services.reactions.add(cast.as.bob, alices[0]!.id, 'like');
    await env.services.reactions.add(cast.as.alice, bobs.id, 'love');
    let before = env.db.queryCount;
    const [ofAlice, ofBob, ofBobAsBob, bigger] = await Promise.all([
      env.services.posts.byAuthors(ANONYMOUS, [cast.alice.id], { limit: 2, offset: 0 }, NO_READS),
      env.services.posts.byAuthors(ANONYMOUS, [cast.bob.id], { limit: 2, offset: 0 }, NO_READS),
      env.services.posts.byAuthors(cast.as.bob, [cast.bob.id], { limit: 2, offset: 0 }, NO_READS),
      env.services.posts.byAuthors(ANONYMOUS, [cast.bob.id], { limit: 3, offset: 0 }, NO_READS),
    ]);
    // Page size 2: one statement for both authors; size 3: one of its own; and one for the
    // published posts of bob, whose draft the anonymous callers may not see (sizes 2 and 3).
    expect(env.db.queryCount - before).toBe(4);
    expect(ofAlice.map((posts) => posts.map((p) => p.title))).toEqual([['a1', 'a0']]);
    expect(ofBob.map((posts) => posts.map((p) => p.title))).toEqual([['b0']]);
    expect(ofBobAsBob.map((posts) => posts.map((p) => p.title))).toEqual([[draft.title, 'b0']]);
    expect(bigger).toEqual(ofBob);

    before = env.db.queryCount;
    const page = { limit: 5, offset: 0 };
    const [first, second] = await Promise.all([
      env.services.reactions.byPosts([alices[0]!.id], page, NO_READS),
      env.services.reactions.byPosts([bobs.id, alices[1]!.id], page, NO_READS),
    ]);
    expect(env.db.queryCount - before).toBe(1);
    expect(first.map((list) => list.map((r) => r.type))).toEqual([['like']]);
    expect(second.map((list) => list.map((r) => r.type))).toEqual([['love'], []]);
  });

  it("byAuthors takes each author's newest by time, ties broken by id, among many posts", async () => {
    const rows = Array.from({ length: 40 }, (_, i) => {
      const id = `many-${String(i).padStart(2, '0')}`;
      // Ten share the newest time; the rest are older, one second apart.
      const created = i < 10 ? '2030-01-01T00:00:00.000Z' : `2029-01-01T00:00:${String(i).padStart(2, '0')}.000Z`;
      return { id, author_id: cast.alice.id, title: id, content: null, published: i === 7 ? 0 : 1, tags: null, created_at: created, updated_at: created };
    });
    await env.db.domain.insertInto('posts').values(rows).execute();
    const [asAlice, asOther] = await Promise.all([
      env.services.posts.byAuthors(cast.as.alice, [cast.alice.id, cast.bob.id], { limit: 5, offset: 3 }, NO_READS),
      env.services.posts.byAuthors(ANONYMOUS, [cast.bob.id, cast.alice.id], { limit: 5, offset: 3 }, NO_READS),
    ]);
    expect(asAlice.map((posts) => posts.map((p) => p.id))).toEqual([['many-06', 'many-05', 'many-04', 'many-03', 'many-02'], []]);
    // Her draft (many-07) is hidden from others: her published posts page on without it.
    expect(asOther.map((posts) => posts.map((p) => p.id))).toEqual([[], ['many-05', 'many-04', 'many-03', 'many-02', 'many-01']]);
  });

  it('byAuthors pages each author separately in one query (two when a draft on the page is hidden)', async () => {
    const a: Post[] = [];
    const b: Post[] = [];
    for (let i = 0; i < 5; i++) a.push(await makePost(env, cast.alice, { title: `a${i}` }));
    for (let i = 0; i < 2; i++) b.push(await makePost(env, cast.bob, { title: `b${i}` }));
    await makePost(env, cast.bob, { published: false });
    const ids = [cast.alice.id, cast.bob.id, cast.editor.id, cast.alice.id];
    const before = env.db.queryCount;
    const pages = await env.services.posts.byAuthors(ANONYMOUS, ids, { limit: 2, offset: 1 }, NO_READS);
    // Bob's draft is among his newest three: hidden from this caller, so his published posts are read again.
    expect(env.db.queryCount - before).toBe(2);
    const titles = pages.map((posts) => posts.map((p) => p.title));
    expect(titles).toEqual([['a3', 'a2'], ['b0'], [], ['a3', 'a2']]);
    // Bob sees his own draft, in the same one query everyone's page comes from.
    const asBob = await env.services.posts.byAuthors(cast.as.bob, [cast.bob.id], { limit: 2, offset: 0 }, NO_READS);
    expect(asBob[0]?.map((p) => p.published)).toEqual([false, true]);
    const fromOne = env.db.queryCount;
    const first = await env.services.posts.byAuthors(ANONYMOUS, [cast.alice.id], { limit: 3, offset: 0 }, NO_READS);
    expect(env.db.queryCount - fromOne).toBe(1);
    expect(first[0]?.map((p) => p.title)).toEqual(['a4', 'a3', 'a2']);
    await expect(env.services.posts.byAuthors(ANONYMOUS, ids, { limit: 0, offset: 0 }, NO_READS)).rejects.toMatchObject({
      argument: 'limit',
    });
  });

  it('likesByPostIds answers in input order with one query', async () => {
    const p1 = await makePost(env, cast.alice);
    const p2 = await makePost(env, cast.bob);
    await env.services.reactions.add(cast.as.bob, p1.id, 'like');
    await env.services.reactions.add(cast.as.alice, p1.id, 'like');
    await env.services.reactions.add(cast.as.alice, p1.id, 'love');
    const before = env.db.queryCount;
    expect(await env.services.posts.likesByPostIds([p2.id, p1.id, 'x'], NO_READS)).toEqual([0, 2, 0]);
    expect(env.db.queryCount - before).toBe(1);
  });

  it('stores tags and strings verbatim', async () => {
    const post = await env.services.posts.create(cast.as.editor, {
      title: '<b>Bold</b> 😀',
      content: '& more',
      authorId: cast.editor.id,
      tags: ['a', 'b'],
    });
    expect(await env.services.posts.byId(cast.as.editor, post.id, NO_READS)).toMatchObject({
      title: '<b>Bold</b> 😀',
      content: '& more',
      tags: ['a', 'b'],
      published: false,
    });
  });
});

describe('createPost', () => {
  const input = (authorId: string) => ({ title: 'T', authorId });

  it.each([
    ['anonymous', 'alice', 'UNAUTHENTICATED'],
    ['alice', 'alice', 'FORBIDDEN'],
    ['editor', 'editor2', 'FORBIDDEN'],
  ] as const)('%s as author %s → %s', async (who, author, expected) => {
    await expect(env.services.posts.create(cast.as[who], input(cast[author].id))).rejects.toMatchObject(code(expected));
  });

  it('an editor writes as themself, an admin for anyone; a missing author is NOT_FOUND', async () => {
    expect(await env.services.posts.create(cast.as.editor, input(cast.editor.id))).toMatchObject({ authorId: cast.editor.id });
    expect(await env.services.posts.create(cast.as.admin, input(cast.alice.id))).toMatchObject({ authorId: cast.alice.id });
    await expect(env.services.posts.create(cast.as.admin, input('missing'))).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'User not found',
    });
    await expect(env.services.posts.create(cast.as.editor, { ...input(cast.editor.id), title: '' })).rejects.toMatchObject({
      argument: 'title',
    });
  });

  it('publishes postPublished only when created published', async () => {
    const post = await env.services.posts.create(cast.as.editor, { ...input(cast.editor.id), published: false });
    const sub = record<Post>(env.pubsub, channels.postPublished(post.id));
    await env.services.posts.publish(cast.as.editor, post.id);
    await flush();
    expect(sub.events.map((p) => [p.id, p.published])).toEqual([[post.id, true]]);
    await sub.stop();
    // A published creation: subscribe to everything the pub/sub sees through a spy.
    const seen: string[] = [];
    const original = env.pubsub.publish.bind(env.pubsub);
    env.pubsub.publish = async (channel, payload) => {
      seen.push(channel);
      return original(channel, payload);
    };
    const live = await env.services.posts.create(cast.as.editor, { ...input(cast.editor.id), published: true });
    await env.services.posts.create(cast.as.editor, input(cast.editor.id));
    expect(seen).toEqual([channels.postPublished(live.id)]);
  });
});

describe('updatePost and publishPost', () => {
  let post: Post;
  beforeEach(async () => {
    post = await makePost(env, cast.editor, { published: false });
  });

  it.each([
    ['anonymous', 'UNAUTHENTICATED'],
    ['alice', 'FORBIDDEN'],
    ['editor2', 'FORBIDDEN'],
  ] as const)('%s → %s', async (who, expected) => {
    await expect(env.services.posts.update(cast.as[who], post.id, { title: 'X' })).rejects.toMatchObject(code(expected));
    await expect(env.services.posts.publish(cast.as[who], post.id)).rejects.toMatchObject(code(expected));
    // The refused statements changed nothing; once published, the post is refused the same way.
    expect(await env.services.posts.byId(cast.as.admin, post.id, NO_READS)).toMatchObject({ title: post.title, published: false });
    await env.services.posts.publish(cast.as.editor, post.id);
    await expect(env.services.posts.update(cast.as[who], post.id, { title: 'X' })).rejects.toMatchObject(code(expected));
    await expect(env.services.posts.publish(cast.as[who], post.id)).rejects.toMatchObject(code(expected));
    expect(await env.services.posts.byId(cast.as.admin, post.id, NO_READS)).toMatchObject({ title: post.title, published: true });
  });

  it('NOT_FOUND for a missing post', async () => {
    const notFound = { code: 'NOT_FOUND', message: 'Post not found' };
    await expect(env.services.posts.update(cast.as.editor, 'missing', { title: 'X' })).rejects.toMatchObject(notFound);
    await expect(env.services.posts.publish(cast.as.editor, 'missing')).rejects.toMatchObject(notFound);
  });

  it('the owner and an admin update; null clears content and tags but not title', async () => {
    const updated = await env.services.posts.update(cast.as.editor, post.id, { title: 'New', content: 'c', tags: ['x'] });
    expect(updated).toMatchObject({ title: 'New', content: 'c', tags: ['x'] });
    const cleared = await env.services.posts.update(cast.as.admin, post.id, { content: null, tags: null });
    expect(cleared).toMatchObject({ title: 'New', content: null, tags: null });
    await expect(env.services.posts.update(cast.as.editor, post.id, { title: null })).rejects.toMatchObject({
      argument: 'title',
    });
    await expect(
      env.services.posts.update(cast.as.editor, post.id, { tags: Array.from({ length: 11 }, () => 't') }),
    ).rejects.toMatchObject({ argument: 'tags' });
  });

  it('publishing twice emits one event and returns the post both times', async () => {
    const sub = record<Post>(env.pubsub, channels.postPublished(post.id));
    const other = record<Post>(env.pubsub, channels.postPublished('another'));
    expect(await env.services.posts.publish(cast.as.admin, post.id)).toMatchObject({ published: true });
    expect(await env.services.posts.publish(cast.as.editor, post.id)).toMatchObject({ published: true });
    await flush();
    expect(sub.events).toHaveLength(1);
    expect(other.events).toHaveLength(0);
    await sub.stop();
    await other.stop();
    expect(env.pubsub.listenerCount()).toBe(0);
  });
});

describe('deletePost', () => {
  it.each([
    ['anonymous', 'UNAUTHENTICATED'],
    ['alice', 'FORBIDDEN'],
    ['editor', 'FORBIDDEN'],
  ] as const)('%s → %s (even on their own post)', async (who, expected) => {
    const post = await makePost(env, cast.editor);
    await expect(env.services.posts.delete(cast.as[who], post.id)).rejects.toMatchObject(code(expected));
  });

  it('an admin deletes the post with its reactions; then NOT_FOUND', async () => {
    const post = await makePost(env, cast.editor);
    await env.services.reactions.add(cast.as.alice, post.id, 'like');
    expect(await env.services.posts.delete(cast.as.admin, post.id)).toBe(true);
    expect(await env.db.kysely.selectFrom('reactions').select('id').execute()).toEqual([]);
    await expect(env.services.posts.delete(cast.as.admin, post.id)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: 'Post not found',
    });
  });
});

describe('books', () => {
  it.each([
    ['anonymous', 'UNAUTHENTICATED'],
    ['alice', 'FORBIDDEN'],
  ] as const)('addBook as %s → %s', async (who, expected) => {
    await expect(env.services.books.add(cast.as[who], { title: 'T', author: 'A' })).rejects.toMatchObject(code(expected));
  });

  it('editors and admins add; list is newest first; byIds in order', async () => {
    const b1 = await env.services.books.add(cast.as.editor, { title: 'One', author: 'A', year: -500 });
    await new Promise((r) => setTimeout(r, 2));
    const b2 = await env.services.books.add(cast.as.admin, { title: 'Two', author: 'B' });
    expect(b2.year).toBeNull();
    expect((await env.services.books.list({ limit: 10, offset: 0 }, NO_READS)).map((b) => b.id)).toEqual([b2.id, b1.id]);
    expect((await env.services.books.byIds(['x', b1.id], NO_READS)).map((b) => b?.title)).toEqual([undefined, 'One']);
    await expect(env.services.books.add(cast.as.editor, { title: 'T', author: 'A', year: 3001 })).rejects.toMatchObject({
      argument: 'year',
    });
  });
});
