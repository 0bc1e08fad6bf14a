import DataLoader from 'dataloader';
import type { Caller } from '../domain/caller.js';
import type { PostWithLikes } from '../domain/post-cache.js';
import type { Reads } from '../cache/reads.js';
import type { Services } from '../domain/services.js';
import type { Book, Page, PostColumns, PostListing, Reaction, User } from '../domain/types.js';

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
  /** Each author's page of posts: every column, or only the listing's (./resolvers/selection.ts). */
  postsByAuthor(page: Page, columns: PostColumns): DataLoader<string, PostListing[]>;
  reactionsByPost(page: Page): DataLoader<string, Reaction[]>;
}

/**
 * A class, not an object literal with getters: a literal's getters are closures made per
 * request, and V8 gives each such object a hidden class of its own, kept in the old
 * generation. Pointing at the request's loaders, it kept everything they reached alive
 * through every young collection until a full one (docs/decisions.md, "Per-request loaders").
 */
class RequestLoaders implements Loaders {
  #user: Loaders['user'] | undefined;
  #postWithLikes: Loaders['postWithLikes'] | undefined;
  #book: Loaders['book'] | undefined;
  #postsCount: Loaders['postsCount'] | undefined;
  #likes: Loaders['likes'] | undefined;
  readonly #postsByAuthor = new Map<string, DataLoader<string, PostListing[]>>();
  readonly #reactionsByPost = new Map<string, DataLoader<string, Reaction[]>>();

  constructor(
    private readonly services: Services,
    private readonly caller: Caller,
    private readonly reads: Reads,
  ) {}

  get user(): Loaders['user'] {
    return (this.#user ??= new DataLoader((ids) => this.services.users.byIds(ids, this.reads)));
  }

  get postWithLikes(): Loaders['postWithLikes'] {
    return (this.#postWithLikes ??= new DataLoader(async (ids) => {
      const found = await this.services.posts.byIdsWithLikes(this.caller, ids, this.reads);
      // The cached entry carries the like count: `likes` needs no query.
      for (const entry of found) if (entry) this.likes.prime(entry.post.id, entry.likes);
      return found;
    }));
  }

  get book(): Loaders['book'] {
    return (this.#book ??= new DataLoader((ids) => this.services.books.byIds(ids, this.reads)));
  }

  get postsCount(): Loaders['postsCount'] {
    return (this.#postsCount ??= new DataLoader((ids) => this.services.users.postsCountByAuthors(this.caller, ids, this.reads)));
  }

  get likes(): Loaders['likes'] {
    return (this.#likes ??= new DataLoader((ids) => this.services.posts.likesByPostIds(ids, this.reads)));
  }

  // One loader per page (and columns), because a batch query takes one limit and offset for all keys.
  postsByAuthor(page: Page, columns: PostColumns): DataLoader<string, PostListing[]> {
    const key = `${page.limit}:${page.offset}:${columns}`;
    let loader = this.#postsByAuthor.get(key);
    if (!loader) {
      loader = new DataLoader((ids) => this.services.posts.byAuthors(this.caller, ids, page, this.reads, columns));
      this.#postsByAuthor.set(key, loader);
    }
    return loader;
  }

  reactionsByPost(page: Page): DataLoader<string, Reaction[]> {
    const key = `${page.limit}:${page.offset}`;
    let loader = this.#reactionsByPost.get(key);
    if (!loader) {
      loader = new DataLoader((ids) => this.services.reactions.byPosts(ids, page, this.reads));
      this.#reactionsByPost.set(key, loader);
    }
    return loader;
  }
}

export function createLoaders(services: Services, caller: Caller, reads: Reads): Loaders {
  return new RequestLoaders(services, caller, reads);
}
