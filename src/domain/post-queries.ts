import { sql, type ExpressionBuilder } from 'kysely';
import type { Db } from '../db/connect.js';
import { newestPerKey } from '../db/newest-per-key.js';
import type { Database, PostRow } from '../db/schema.js';
import { statementsOf } from '../db/statements.js';
import type { PostWithLikes } from './post-cache.js';
import { LIKE, type Post, type PostColumns, type PostListing } from './types.js';

/**
 * The SQL of post reads and the mapping of their rows (./posts.ts and ./post-pages.ts
 * decide who may see what; these only build the statements they run).
 */

/** The columns of a `PostListing`. */
export const LISTING_COLUMNS = ['id', 'author_id', 'title', 'published', 'created_at'] as const;
const ALL_COLUMNS = [...LISTING_COLUMNS, 'content', 'tags', 'updated_at'] as const;

/** The columns a list reads: every one, or the listing's. */
export const columnsOf = (columns: PostColumns) => (columns === 'all' ? ALL_COLUMNS : LISTING_COLUMNS);

/** A listing's row: what `LISTING_COLUMNS` reads. */
export type ListingRow = Pick<PostRow, (typeof LISTING_COLUMNS)[number]>;

export function toListing(row: ListingRow): PostListing {
  return { id: row.id, authorId: row.author_id, title: row.title, published: row.published === 1, createdAt: row.created_at };
}

/** How rows read with `columnsOf(columns)` become posts: with every column, a row is a whole post's. */
export function fromRows(columns: PostColumns): (row: ListingRow) => PostListing {
  return columns === 'all' ? (row) => toPost(row as PostRow) : toListing;
}

export function toPost(row: PostRow): Post {
  return {
    id: row.id,
    authorId: row.author_id,
    title: row.title,
    content: row.content,
    published: row.published === 1,
    tags: row.tags === null ? null : (JSON.parse(row.tags) as string[]),
    createdAt: row.created_at,
  };
}

/** The post rows with their like counts, in one statement; the post cache's loader. */
export async function loadPostsWithLikes(db: Db, ids: readonly string[]): Promise<Map<string, PostWithLikes>> {
  const withLikes = (list: readonly string[]) =>
    db.domain
      .selectFrom('posts')
      .selectAll('posts')
      .select((eb) =>
        eb
          .selectFrom('reactions')
          .select((sub) => sub.fn.countAll<string | number>().as('n'))
          .whereRef('reactions.post_id', '=', 'posts.id')
          .where('reactions.type', '=', LIKE)
          .as('likes'),
      )
      .where('posts.id', 'in', list);
  const rows = await statementsOf(db.domain).rows('postsWithLikes', withLikes, [[...new Set(ids)]]);
  // PostgreSQL returns count(*) as a bigint string, SQLite as a number.
  return new Map(rows.map(({ likes, ...post }) => [post.id, { post: toPost(post), likes: Number(likes ?? 0) }]));
}

export function visibleIn(scope: readonly string[]) {
  return (eb: ExpressionBuilder<Database, 'posts'>) =>
    scope.length > 0 ? eb.or([eb('published', '=', 1), eb('author_id', 'in', scope)]) : eb('published', '=', 1);
}

export type PostsDb = Db['domain'];

/** A row when a draft is among the newest `n` posts, none otherwise. */
export function draftAmong(db: PostsDb, n: number) {
  const newest = db.selectFrom('posts').select('published').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(n);
  return db.selectFrom(newest.as('n')).select('published').where('published', '=', 0).limit(1);
}

/** Distinct authors of drafts, at most `max`: of every draft, or of those newer than `after` (by `created_at`, ties by `id`). */
export function draftAuthors(db: PostsDb, max: number, after?: { at: string; id: string }) {
  const drafts = db.selectFrom('posts').select('author_id').distinct().where('published', '=', 0);
  const newer = after ? drafts.where((eb) => eb(eb.refTuple('created_at', 'id'), '>', eb.tuple(after.at, after.id))) : drafts;
  return newer.limit(max);
}

/** A page of published posts, each row also saying whether a draft is among the newest `n` posts. */
export function publishedPage(db: PostsDb, columns: PostColumns) {
  return (n: number, limit: number, offset: number) =>
    db
      .selectFrom('posts')
      .select(columnsOf(columns))
      .select((eb) => eb.exists(draftAmong(db, n)).as('draft_among_newest'))
      .where('published', '=', 1)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset);
}

/** PostgreSQL answers `exists` with a boolean, SQLite with 0 or 1. */
export const isTrue = (value: unknown) => value === true || value === 1;

/**
 * Each author's newest `n` posts (published ones only, or drafts too), grouped by author
 * in the order given, newest first: every column, or the listing's.
 */
export function authorsNewest(db: Db, authorIds: readonly string[], n: number, publishedOnly: boolean, columns: PostColumns): Promise<ListingRow[]> {
  const filter = publishedOnly ? sql`q.published = 1` : undefined;
  return newestPerKey<ListingRow>(db, 'posts', 'author_id', authorIds, n, filter, columnsOf(columns));
}
