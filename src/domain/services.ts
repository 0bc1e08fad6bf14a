import { BookService } from './books.js';
import type { DomainDeps } from './deps.js';
import { EntityCache } from '../cache/entity-cache.js';
import { postKind, type PostCache } from './post-cache.js';
import { loadPostsWithLikes } from './post-queries.js';
import { PostService } from './posts.js';
import { ReactionService } from './reactions.js';
import { UserService } from './users.js';

export interface Services {
  users: UserService;
  posts: PostService;
  reactions: ReactionService;
  books: BookService;
  postCache: PostCache;
}

/**
 * Builds the services once per app (they hold no request state). `onCacheError` hears
 * key-value store failures the post cache absorbs (it falls back to the database).
 */
export function createServices(deps: DomainDeps, onCacheError?: (err: unknown) => void): Services {
  const postCache: PostCache = new EntityCache(deps.kv, deps.versions, postKind((ids) => loadPostsWithLikes(deps.db, ids)), onCacheError);
  return {
    users: new UserService(deps),
    posts: new PostService(deps, postCache),
    reactions: new ReactionService(deps, postCache),
    books: new BookService(deps),
    postCache,
  };
}
