import type { PostRow, PostsTable } from '../db/schema.js';
import { BadUserInputError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.js';
import { channels } from '../realtime/pubsub.js';
import { can, canSeeUnpublished, isSelf, isSignedIn, type Caller, type SignedInCaller } from './caller.js';
import type { DomainDeps } from './deps.js';
import { newId, nowIso } from './ids.js';
import type { PostCache, PostWithLikes } from './post-cache.js';
import { PostPages } from './post-pages.js';
import { authorsNewest, fromRows, LISTING_COLUMNS, toPost, type ListingRow } from './post-queries.js';
import { tags, type Reads } from '../cache/reads.js';
import { SharedBatch } from '../db/shared-batch.js';
import { statementsOf } from '../db/statements.js';
import { LIKE, type Page, type Post, type PostColumns, type PostListing } from './types.js';
import {
  checkId,
  checkPage,
  checkPostContent,
  checkPostTitle,
  checkTags,
  isForeignKeyViolation,
} from './validate.js';

export interface CreatePostInput {
  title: string;
  content?: string | null;
  authorId: string;
  tags?: readonly string[] | null;
  published?: boolean | null;
}

/** `undefined` leaves a field unchanged; `null` clears content or tags and is refused for the required title. */
export interface PostPatch {
  title?: string | null;
  content?: string | null;
  tags?: readonly string[] | null;
}

export function isVisible(caller: Caller, post: PostListing): boolean {
  return post.published || canSeeUnpublished(caller, post.authorId);
}

/** Acting on another author's posts is an admin right; only admins hold delete:posts. */
function mayActForOthers(caller: Caller): boolean {
  return can(caller, 'delete:posts');
}

export class PostService {
  /**
   * Authors' newest posts, drafts included or not, every column or the listing's, for
   * every request at once, one statement per page size (src/db/shared-batch.ts): the
   * same for every caller.
   */
  private readonly windows = {
    all: { newest: this.window(false, 'all'), published: this.window(true, 'all') },
    listing: { newest: this.window(false, 'listing'), published: this.window(true, 'listing') },
  };

  /** Pages of the newest posts, as each caller may see them. */
  private readonly pages: PostPages;

  constructor(
    private readonly deps: DomainDeps,
    readonly cache: PostCache,
  ) {
    this.pages = new PostPages(deps);
  }

  private window(publishedOnly: boolean, columns: PostColumns) {
    return new SharedBatch((authorIds, count: number) => authorsNewest(this.deps.db, authorIds, count, publishedOnly, columns));
  }

  /** Writes through this handle are announced: each bumps the tags of what it changed. */
  private get db() {
    return this.deps.db.domain;
  }

  private get statements() {
    return statementsOf(this.deps.db.domain);
  }

  /** Visible posts, newest first: the caller's page (./post-pages.ts). */
  async list(caller: Caller, page: Page, reads: Reads): Promise<Post[]>;
  /** The same as listings: no content or tags read (for a selection that asks for neither). */
  async list(caller: Caller, page: Page, reads: Reads, columns: PostColumns): Promise<PostListing[]>;
  async list(caller: Caller, page: Page, reads: Reads, columns: PostColumns = 'all'): Promise<PostListing[]> {
    const { limit, offset } = checkPage(page.limit, page.offset);
    const rows = await reads.read(listTags([tags.posts], columns), () => this.pages.rows(caller, limit, offset, columns));
    return rows.map(fromRows(columns));
  }

  /** Through the cache; null when missing or not visible to the caller. */
  async byId(caller: Caller, id: string, reads: Reads): Promise<Post | null> {
    return (await this.byIdWithLikes(caller, id, reads))?.post ?? null;
  }

  async byIdWithLikes(caller: Caller, id: string, reads: Reads): Promise<PostWithLikes | null> {
    return (await this.byIdsWithLikes(caller, [id], reads))[0]!;
  }

  /** In input order, through the cache (one read for all); null where missing or not visible to the caller. */
  async byIdsWithLikes(caller: Caller, ids: readonly string[], reads: Reads): Promise<(PostWithLikes | null)[]> {
    for (const id of ids) checkId('id', id);
    const found = await reads.read(
      ids.flatMap((id) => [tags.post(id), tags.likes(id)]),
      () => this.cache.getMany(ids),
    );
    return found.map((entry) => (entry && isVisible(caller, entry.post) ? entry : null));
  }

  /**
   * Each author's visible posts, newest first, paged per author; one query for
   * the batch, the same for every caller: each author's newest `offset + limit` posts,
   * drafts included. Only for an author with a draft among them is the caller asked
   * whether they may see it; if not, that author's published posts are read instead.
   */
  async byAuthors(caller: Caller, authorIds: readonly string[], page: Page, reads: Reads): Promise<Post[][]>;
  /** The same as listings: no content or tags read (for a selection that asks for neither). */
  async byAuthors(caller: Caller, authorIds: readonly string[], page: Page, reads: Reads, columns: PostColumns): Promise<PostListing[][]>;
  async byAuthors(caller: Caller, authorIds: readonly string[], page: Page, reads: Reads, columns: PostColumns = 'all'): Promise<PostListing[][]> {
    const { limit, offset } = checkPage(page.limit, page.offset);
    if (authorIds.length === 0) return [];
    const unique = [...new Set(authorIds)];
    const end = offset + limit;
    const windows = this.windows[columns];
    const pages = await reads.read(listTags(unique.map(tags.postsBy), columns), async () => {
      const newest = await this.newestByAuthors(windows.newest, unique, end);
      const hidden = unique.filter((id) => newest.get(id)?.some((row) => row.published === 0) && !canSeeUnpublished(caller, id));
      if (hidden.length > 0) {
        const published = await this.newestByAuthors(windows.published, hidden, end);
        for (const id of hidden) newest.set(id, published.get(id) ?? []);
      }
      return newest;
    });
    const toPosts = fromRows(columns);
    return authorIds.map((id) => (pages.get(id) ?? []).slice(offset).map(toPosts));
  }

  /** Each author's newest `count` posts from `window` (published ones only, or all), newest first. */
  private async newestByAuthors(window: SharedBatch<ListingRow, number>, authorIds: readonly string[], count: number): Promise<Map<string, ListingRow[]>> {
    const rows = await window.rows(authorIds, count);
    const wanted = new Set(authorIds);
    const byAuthor = new Map<string, ListingRow[]>();
    for (const row of rows) {
      if (!wanted.has(row.author_id)) continue; // another request's author, from the shared statement
      const own = byAuthor.get(row.author_id);
      if (own) own.push(row);
      else byAuthor.set(row.author_id, [row]);
    }
    return byAuthor;
  }

  /** Reactions of type "like" per post; one grouped query. */
  async likesByPostIds(ids: readonly string[], reads: Reads): Promise<number[]> {
    if (ids.length === 0) return [];
    const unique = [...new Set(ids)];
    const likes = (list: readonly string[]) =>
      this.db
        .selectFrom('reactions')
        .select((eb) => ['post_id', eb.fn.countAll<string | number>().as('n')])
        .where('post_id', 'in', list)
        .where('type', '=', LIKE)
        .groupBy('post_id');
    const rows = await reads.read(unique.map(tags.likes), () => this.statements.rows('likes', likes, [unique]));
    const counts = new Map(rows.map((row) => [row.post_id, Number(row.n)]));
    return ids.map((id) => counts.get(id) ?? 0);
  }

  /** createPost: write:posts; the author must be the caller unless admin. */
  async create(caller: Caller, input: CreatePostInput): Promise<Post> {
    const writer = requireWriter(caller);
    checkId('authorId', input.authorId);
    if (!isSelf(writer, input.authorId) && !mayActForOthers(writer)) {
      throw new ForbiddenError('You may only write posts as yourself');
    }
    const now = nowIso();
    const row: PostRow = {
      id: newId(),
      author_id: input.authorId,
      title: checkPostTitle(input.title),
      content: input.content === undefined || input.content === null ? null : checkPostContent(input.content),
      published: input.published ? 1 : 0,
      tags: input.tags === undefined || input.tags === null ? null : JSON.stringify(checkTags(input.tags)),
      created_at: now,
      updated_at: now,
    };
    try {
      await this.db.insertInto('posts').values(row).execute();
    } catch (err) {
      // No such author (or deleted meanwhile): the foreign key decides, in one statement.
      if (isForeignKeyViolation(err)) throw new NotFoundError('User');
      throw err;
    }
    // The new id too: a response may have cached its absence.
    await this.deps.versions.bump([tags.posts, tags.postsBy(row.author_id), tags.post(row.id)]);
    const post = toPost(row);
    if (post.published) await this.emitPublished(post);
    return post;
  }

  /** updatePost: write:posts, own post unless admin. */
  async update(caller: Caller, id: string, patch: PostPatch): Promise<Post> {
    const writer = requireWriter(caller);
    checkId('id', id);
    const changes: Partial<PostsTable> = {};
    if (patch.title !== undefined) {
      if (patch.title === null) throw new BadUserInputError('title', 'title cannot be null');
      changes.title = checkPostTitle(patch.title);
    }
    if (patch.content !== undefined) changes.content = patch.content === null ? null : checkPostContent(patch.content);
    if (patch.tags !== undefined) changes.tags = patch.tags === null ? null : JSON.stringify(checkTags(patch.tags));

    if (Object.keys(changes).length === 0) return toPost(await this.loadForWrite(writer, id));
    changes.updated_at = nowIso();
    // One statement checks and writes: the caller's own post (any post for an admin), the
    // row as this update left it. Only a refused update reads the post, to say why.
    const updated = await this.db
      .updateTable('posts')
      .set(changes)
      .where('id', '=', id)
      .$if(!mayActForOthers(writer), (update) => update.where('author_id', '=', writer.id))
      .returningAll()
      .executeTakeFirst();
    if (!updated) {
      await this.loadForWrite(writer, id);
      // Found and the caller's on this read, yet not updated: not possible while a post keeps its author.
      throw new NotFoundError('Post');
    }
    await this.deps.versions.bump(changedPost(updated, changes));
    return toPost(updated);
  }

  /** publishPost: write:posts, own post unless admin. Publishing twice emits one event. */
  async publish(caller: Caller, id: string): Promise<Post> {
    const writer = requireWriter(caller);
    checkId('id', id);
    // As updatePost, one statement checks and writes; the `published = 0` condition makes
    // the transition happen once even under concurrency.
    const published = await this.db
      .updateTable('posts')
      .set({ published: 1, updated_at: nowIso() })
      .where('id', '=', id)
      .where('published', '=', 0)
      .$if(!mayActForOthers(writer), (update) => update.where('author_id', '=', writer.id))
      .returningAll()
      .executeTakeFirst();
    // Refused, or published already: the read says which (NOT_FOUND, FORBIDDEN, or the post as it is).
    if (!published) return toPost(await this.loadForWrite(writer, id));
    await this.deps.versions.bump(changedPost(published));
    const post = toPost(published);
    await this.emitPublished(post);
    return post;
  }

  /** deletePost: delete:posts. The post's reactions go in the same transaction. */
  async delete(caller: Caller, id: string): Promise<boolean> {
    if (!isSignedIn(caller)) throw new UnauthenticatedError();
    if (!can(caller, 'delete:posts')) throw new ForbiddenError();
    checkId('id', id);
    const deleted = await this.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('posts').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row || !isVisible(caller, toPost(row))) throw new NotFoundError('Post');
      await trx.deleteFrom('reactions').where('post_id', '=', id).execute();
      await trx.deleteFrom('posts').where('id', '=', id).execute();
      return row;
    });
    await this.deps.versions.bump([...changedPost(deleted), tags.reactions(id), tags.likes(id)]);
    return true;
  }

  /** The post as a mutation's target: NOT_FOUND when missing or invisible, FORBIDDEN when not the caller's. */
  private async loadForWrite(caller: SignedInCaller, id: string): Promise<PostRow> {
    const row = await this.db.selectFrom('posts').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row || !isVisible(caller, toPost(row))) throw new NotFoundError('Post');
    if (!isSelf(caller, row.author_id) && !mayActForOthers(caller)) {
      throw new ForbiddenError('You may only change your own posts');
    }
    return row;
  }

  private async emitPublished(post: Post): Promise<void> {
    await this.deps.pubsub.publish(channels.postPublished(post.id), post).catch(() => {
      // Subscribers may miss events during a pub/sub outage (docs/operations.md); the post is stored.
    });
  }
}

/**
 * A post's row changed (`changed`: those columns; any when not said): the post, and the
 * lists it is in as far as they show what changed (a listing shows no content or tags).
 */
function changedPost(row: Pick<PostRow, 'id' | 'author_id'>, changed?: Partial<PostsTable>): string[] {
  const listed = !changed || LISTING_COLUMNS.some((column) => column in changed);
  const contents = !changed || 'content' in changed || 'tags' in changed;
  return [tags.post(row.id), ...(listed ? [tags.posts, tags.postsBy(row.author_id)] : []), ...(contents ? [tags.postContents] : [])];
}

/** The tags a list's read records: its own, and the lists' content when it reads every column. */
function listTags(own: string[], columns: PostColumns): string[] {
  return columns === 'all' ? [...own, tags.postContents] : own;
}

function requireWriter(caller: Caller): SignedInCaller {
  if (!isSignedIn(caller)) throw new UnauthenticatedError();
  if (!can(caller, 'write:posts')) throw new ForbiddenError();
  return caller;
}
