import DataLoader from 'dataloader';
import type { Caller } from '../domain/caller.js';
import type { PostWithLikes } from '../domain/post-cache.js';
import type { Reads } from '../cache/reads.js';
import type { Services } from '../domain/services.js';
import type { Book, Page, Post, Reaction, User } from '../domain/types.js';

/**
 * Per-request DataLoaders: they batch the lookups of one operation into one query
 * per kind and cache within that request only. Created lazily, so an operation that
 * needs one loader does not pay for the others. Each batch records its dependencies
 * in the request's `reads` (src/cache/reads.ts).
 */
export interface Loaders {
  readonly user: DataLoader<string, User | undefined>;
  /** Through the post cache, null when missing or not visible to the caller; primes `likes`. */
  readonly postWithLikes: DataLoader<string, PostWithLikes | null>;
  readonly book: DataLoader<string, Book | undefined>;
  readonly postsCount: DataLoader<string, number>;
  readonly likes: DataLoader<string, number>;
  postsByAuthor(page: Page): DataLoader<string, Post[]>;
  reactionsByPost(page: Page): DataLoader<string, Reaction[]>;
}

export function createLoaders(services: Services, caller: Caller, reads: Reads): Loaders {
  let user: Loaders['user'] | undefined;
  let postWithLikes: Loaders['postWithLikes'] | undefined;
  let book: Loaders['book'] | undefined;
  let postsCount: Loaders['postsCount'] | undefined;
  let likes: Loaders['likes'] | undefined;
  const postsByAuthor = new Map<string, DataLoader<string, Post[]>>();
  const reactionsByPost = new Map<string, DataLoader<string, Reaction[]>>();

  const loaders: Loaders = {
    get user() {
      return (user ??= new DataLoader((ids) => services.users.byIds(ids, reads)));
    },
    get postWithLikes() {
      return (postWithLikes ??= new DataLoader(async (ids) => {
        const found = await services.posts.byIdsWithLikes(caller, ids, reads);
        // The cached entry carries the like count: `likes` needs no query.
        for (const entry of found) if (entry) loaders.likes.prime(entry.post.id, entry.likes);
        return found;
      }));
    },
    get book() {
      return (book ??= new DataLoader((ids) => services.books.byIds(ids, reads)));
    },
    get postsCount() {
      return (postsCount ??= new DataLoader((ids) => services.users.postsCountByAuthors(caller, ids, reads)));
    },
    get likes() {
      return (likes ??= new DataLoader((ids) => services.posts.likesByPostIds(ids, reads)));
    },
    // One loader per page, because a batch query takes one limit and offset for all keys.
    postsByAuthor(page) {
      const key = `${page.limit}:${page.offset}`;
      let loader = postsByAuthor.get(key);
      if (!loader) {
        loader = new DataLoader((ids) => services.posts.byAuthors(caller, ids, page, reads));
        postsByAuthor.set(key, loader);
      }
      return loader;
    },
    reactionsByPost(page) {
      const key = `${page.limit}:${page.offset}`;
      let loader = reactionsByPost.get(key);
      if (!loader) {
        loader = new DataLoader((ids) => services.reactions.byPosts(ids, page, reads));
        reactionsByPost.set(key, loader);
      }
      return loader;
    },
  };
  return loaders;
}
