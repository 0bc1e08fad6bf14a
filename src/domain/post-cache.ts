import { EntityCache, type EntityKind } from '../cache/entity-cache.js';
import { EVERYTHING } from '../cache/versions.js';
import { tags } from '../cache/reads.js';
import type { Post } from './types.js';

/** What one `post(id)` cache entry holds: the post row and its like count, so `post(id) { likes }` needs no query. */
export interface PostWithLikes {
  post: Post;
  likes: number;
}

/** The `post(id)` cache (src/cache/entity-cache.ts): a post's row and like count, bumped by its writes and its likes. */
export type PostCache = EntityCache<PostWithLikes>;

export function postKind(load: (ids: readonly string[]) => Promise<Map<string, PostWithLikes>>): EntityKind<PostWithLikes> {
  return {
    name: 'post',
    tagsOf: (id) => [EVERYTHING, tags.post(id), tags.likes(id)],
    load,
    isEntity: (value): value is PostWithLikes =>
      typeof value === 'object' && value !== null && typeof (value as PostWithLikes).likes === 'number' && typeof (value as PostWithLikes).post === 'object',
  };
}
