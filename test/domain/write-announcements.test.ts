import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tags } from '../../src/cache/reads.js';
import { EVERYTHING } from '../../src/cache/versions.js';
import { createEnv, makeCast, makePost, type TestEnv } from './helpers.js';

/**
 * The domain's writes go through its announced handle (src/cache/write-tracking.ts): each
 * bumps the tags of what it changed and leaves every other cached result standing; a
 * write through any other handle invalidates everything.
 */

let env: TestEnv;
let cast: Awaited<ReturnType<typeof makeCast>>;

beforeEach(async () => {
  env = await createEnv();
  cast = await makeCast(env);
});
afterEach(async () => {
  await env.close();
});

/** The version of everything, once the external-change poll has answered (its first answer bumps it). */
const everything = () => {
  env.versions.read([EVERYTHING]);
  return env.versions.current(EVERYTHING);
};

describe('domain writes', () => {
  it('are announced: each bumps its own tags and leaves everything else cached', async () => {
    const post = await makePost(env, cast.editor);
    const draft = await makePost(env, cast.editor, { published: false });
    const doomed = await makePost(env, cast.editor);
    const before = everything();
    const postVersion = env.versions.current(tags.post(post.id));
    await env.services.reactions.add(cast.as.alice, post.id, 'like');
    await env.services.posts.update(cast.as.editor, post.id, { title: 'Renamed' });
    await env.services.posts.create(cast.as.editor, { authorId: cast.editor.id, title: 'New', tags: ['a'] });
    await env.services.users.update(cast.as.alice, cast.alice.id, { name: 'Alice B' });
    await env.services.posts.publish(cast.as.editor, draft.id);
    // A transaction of several statements, announced as well.
    expect(await env.services.posts.delete(cast.as.admin, doomed.id)).toBe(true);
    expect(env.versions.current(tags.post(post.id))).not.toBe(postVersion);
    expect(everything()).toBe(before);

    // The control: a write outside the domain's handle is not announced, and invalidates everything.
    await sql`update posts set title = 'elsewhere' where id = ${post.id}`.execute(env.db.kysely);
    expect(everything()).not.toBe(before);
  });
});
