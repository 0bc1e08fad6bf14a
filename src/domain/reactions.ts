import type { ReactionRow } from '../db/schema.js';
import { NotFoundError, UnauthenticatedError } from '../errors.js';
import { channels } from '../realtime/pubsub.js';
import { signedInId, type Caller } from './caller.js';
import type { DomainDeps } from './deps.js';
import { newId, nowIso } from './ids.js';
import type { PostCache } from './post-cache.js';
import { isVisible } from './posts.js';
import { tags, type Reads } from '../cache/reads.js';
import { newestPerKey } from '../db/newest-per-key.js';
import { SharedBatch } from '../db/shared-batch.js';
import { LIKE, type Page, type Reaction } from './types.js';
import { checkId, checkPage, checkReactionType, isForeignKeyViolation, isUniqueViolation } from './validate.js';

export function toReaction(row: ReactionRow): Reaction {
  return { id: row.id, postId: row.post_id, userId: row.user_id, type: row.type, createdAt: row.created_at };
}

export class ReactionService {
  /**
   * Posts' newest reactions for every request at once, one statement per page end
   * (src/db/shared-batch.ts): the same for every caller; each takes its page's slice.
   */
  private readonly newest = new SharedBatch((postIds, end: number) => newestPerKey<ReactionRow>(this.deps.db, 'reactions', 'post_id', postIds, end));

  constructor(
    private readonly deps: DomainDeps,
    private readonly posts: PostCache,
  ) {}

  /** Writes through this handle are announced: each bumps the tags of what it changed. */
  private get db() {
    return this.deps.db.domain;
  }

  /** Each post's reactions, newest first, paged per post; one query for the batch. */
  async byPosts(postIds: readonly string[], page: Page, reads: Reads): Promise<Reaction[][]> {
    const { limit, offset } = checkPage(page.limit, page.offset);
    if (postIds.length === 0) return [];
    const unique = [...new Set(postIds)];
    const rows = await reads.read(unique.map(tags.reactions), () => this.newest.rows(unique, offset + limit));
    const grouped = new Map<string, ReactionRow[]>(unique.map((id) => [id, []]));
    // Rows of other requests' posts (the statement is shared) have no group here.
    for (const row of rows) grouped.get(row.post_id)?.push(row);
    return postIds.map((id) => (grouped.get(id) ?? []).slice(offset).map(toReaction));
  }

  /** In input order, undefined where missing; one query. Not read through the API: nothing caches it. */
  async byIds(ids: readonly string[]): Promise<(Reaction | undefined)[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.selectFrom('reactions').selectAll().where('id', 'in', [...new Set(ids)]).execute();
    const byId = new Map(rows.map((row) => [row.id, toReaction(row)]));
    return ids.map((id) => byId.get(id));
  }

  /**
   * addReaction: any signed-in caller, on a post they can see. One reaction of a type
   * per user per post: repeating returns the stored one and emits nothing.
   */
  async add(caller: Caller, postId: string, type: string): Promise<Reaction> {
    const userId = signedInId(caller);
    if (userId === null) throw new UnauthenticatedError();
    checkId('postId', postId);
    checkReactionType(type);
    // Through the post cache, exact like every read of it: mostly no query at all.
    const found = await this.posts.get(postId);
    if (!found || !isVisible(caller, found.post)) throw new NotFoundError('Post');

    const row: ReactionRow = { id: newId(), post_id: postId, user_id: userId, type, created_at: nowIso() };
    try {
      // Insert first and let the unique constraint decide: a select-then-insert would
      // let two concurrent identical requests both insert or both fail.
      await this.db.insertInto('reactions').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) return this.existing(postId, userId, type);
      // The post (or the caller) was deleted between the check and the insert.
      if (isForeignKeyViolation(err)) throw new NotFoundError('Post');
      throw err;
    }
    const reaction = toReaction(row);
    await this.deps.versions.bump(type === LIKE ? [tags.reactions(postId), tags.likes(postId)] : [tags.reactions(postId)]);
    await this.deps.pubsub.publish(channels.postReactionAdded(postId), reaction).catch(() => {
      // Subscribers may miss events during a pub/sub outage (docs/operations.md); the reaction is stored.
    });
    return reaction;
  }

  private async existing(postId: string, userId: string, type: string): Promise<Reaction> {
    const row = await this.db
      .selectFrom('reactions')
      .selectAll()
      .where('post_id', '=', postId)
      .where('user_id', '=', userId)
      .where('type', '=', type)
      .executeTakeFirst();
    // Deleted between the refused insert and this read: the post went with it.
    if (!row) throw new NotFoundError('Post');
    return toReaction(row);
  }
}
