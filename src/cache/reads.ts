import { EVERYTHING } from './versions.js';

/**
 * What cached results depend on (docs/caching.md, "The rule"):
 * every read of the data-access layer names the tags of the data it is about to query,
 * every write bumps the tags of what it changed, after commit. A cached result is valid
 * while the versions of all its tags are those it recorded BEFORE reading.
 */

/**
 * Tags are short strings, one per piece of data a write can change on its own. A list
 * tag covers its membership and the content of its rows (an update of a post bumps the
 * post and the lists it is in), so a list read records one tag, not one per row.
 */
export const tags = {
  /** Everything: writes the service cannot see one by one (another process, a write outside src/domain). */
  all: EVERYTHING,
  /** A post's row (title, content, tags, published, author). */
  post: (id: string) => `p:${id}`,
  /** A post's reactions (Post.reactions). */
  reactions: (postId: string) => `r:${postId}`,
  /** A post's like count, its reactions of type `like` (Post.likes, the post cache): other types leave it. */
  likes: (postId: string) => `l:${postId}`,
  /** The list of all posts (Query.posts): its rows, as a listing shows them (no content or tags). */
  posts: 'P',
  /** An author's posts and their counts (User.posts, User.postsCount), as a listing shows them. */
  postsBy: (authorId: string) => `a:${authorId}`,
  /**
   * The content and tags of the posts in any list: read with `posts` or `postsBy` by a list
   * that shows them. An edit of only these bumps this and the post, and leaves the listings.
   */
  postContents: 'C',
  /** A user's row (name, email, role, …). */
  user: (id: string) => `u:${id}`,
  /** The list of users (Query.users, with or without a role filter). */
  users: 'U',
  /** A session's state (revoked); its user's record is `user`. Read by the session memo (src/cache/session-memo.ts). */
  session: (id: string) => `s:${id}`,
  book: (id: string) => `b:${id}`,
  books: 'B',
} as const;

/**
 * The per-execution recorder that read methods take explicitly (not AsyncLocalStorage,
 * which slows every promise on Node 20). A read method hands it the tags its query
 * covers and the query itself: the recorder runs the query only once it has the tags'
 * versions (at once in memory; with Redis perhaps after fetching them), so a version
 * can never be taken after the data it stands for.
 */
export interface Reads {
  read<T>(tags: readonly string[], query: () => Promise<T>): Promise<T>;
}

/** For reads whose result is not cached: mutations, subscriptions, the account area. */
export const NO_READS: Reads = Object.freeze({ read: <T>(_tags: readonly string[], query: () => Promise<T>) => query() });
