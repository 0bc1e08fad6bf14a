import { SharedRead } from '../db/shared-batch.js';
import { statementsOf } from '../db/statements.js';
import { can, isSelf, isSignedIn, signedInId, type Caller } from './caller.js';
import type { DomainDeps } from './deps.js';
import { columnsOf, draftAmong, draftAuthors, isTrue, publishedPage, visibleIn, type ListingRow } from './post-queries.js';
import type { PostColumns } from './types.js';

/**
 * Most draft authors a reader's page is shared past (the response cache keeps the list
 * with the page, src/cache/sharing.ts); with more, each reader's page is their own.
 */
const MAX_DRAFT_AUTHORS = 100;

/**
 * Pages of the newest posts, as each caller may see them (src/domain/posts.ts `list`).
 * One statement reads the page of published posts and whether a draft is among the newest
 * `offset + limit` posts. Without one, that page is every caller's page and the caller is
 * not consulted at all (shared by everyone in the response cache); with one, it is still
 * an anonymous caller's page, editors and admins read every post's, and a reader's only
 * if they wrote a draft newer than the page's last published post: else it is the page of
 * every reader who did not either (docs/caching.md, "Who shares an answer").
 */
export class PostPages {
  /** The published page is every caller's (until a draft is among it): one statement per turn (src/db/shared-batch.ts). */
  private readonly published = {
    all: this.sharedPage('all'),
    listing: this.sharedPage('listing'),
  };

  /**
   * Authors of drafts newer than a post (`''`: of every draft), for concurrent readers'
   * pages at once, one statement per turn; undefined past MAX_DRAFT_AUTHORS.
   */
  private readonly draftAuthors = new SharedRead(async (at: string, id: string): Promise<readonly string[] | undefined> => {
    const max = MAX_DRAFT_AUTHORS + 1;
    const rows = at
      ? await this.statements.rows('draftAuthorsNewer', (a: string, i: string) => draftAuthors(this.db, max, { at: a, id: i }), [at, id])
      : await this.statements.rows('draftAuthors', () => draftAuthors(this.db, max), []);
    return rows.length > MAX_DRAFT_AUTHORS ? undefined : rows.map((row) => row.author_id);
  });

  constructor(private readonly deps: DomainDeps) {}

  /** The rows of the caller's page, newest first: every column, or the listing's. */
  async rows(caller: Caller, limit: number, offset: number, columns: PostColumns): Promise<ListingRow[]> {
    const published = await this.published[columns].read(offset + limit, limit, offset);
    const draftAmongNewest = published.length > 0 ? isTrue(published[0]!.draft_among_newest) : await this.anyDraftAmongNewest(offset + limit);
    if (!draftAmongNewest) return published;
    const newest = (l: number, o: number) =>
      this.db.selectFrom('posts').select(columnsOf(columns)).orderBy('created_at', 'desc').orderBy('id', 'desc').limit(l).offset(o);
    if (can(caller, 'write:posts')) return this.statements.rows(`posts:${columns}`, newest, [limit, offset]);
    if (!isSignedIn(caller)) return published;
    // Drafts older than the page's last published post come after it in every view.
    const last = published.length === limit ? published[limit - 1] : undefined;
    const authors = await this.draftAuthors.read(last?.created_at ?? '', last?.id ?? '');
    if (authors !== undefined && !authors.some((author) => isSelf(caller, author))) return published;
    const visible = (own: readonly string[], l: number, o: number) => newest(l, o).where(visibleIn(own));
    return this.statements.rows(`visiblePosts:${columns}`, visible, [[signedInId(caller)!], limit, offset]);
  }

  private sharedPage(columns: PostColumns) {
    return new SharedRead((n: number, limit: number, offset: number) =>
      this.statements.rows(`publishedPosts:${columns}`, publishedPage(this.db, columns), [n, limit, offset]),
    );
  }

  private async anyDraftAmongNewest(count: number): Promise<boolean> {
    const [draft] = await this.statements.rows('draftAmongNewest', (n: number) => draftAmong(this.db, n), [count]);
    return draft !== undefined;
  }

  private get db() {
    return this.deps.db.domain;
  }

  private get statements() {
    return statementsOf(this.deps.db.domain);
  }
}
