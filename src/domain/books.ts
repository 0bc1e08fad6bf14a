import type { BookRow } from '../db/schema.js';
import { ForbiddenError, UnauthenticatedError } from '../errors.js';
import { can, isSignedIn, type Caller } from './caller.js';
import type { DomainDeps } from './deps.js';
import { newId, nowIso } from './ids.js';
import { tags, type Reads } from '../cache/reads.js';
import { statementsOf } from '../db/statements.js';
import type { Book, Page } from './types.js';
import { checkBookAuthor, checkBookTitle, checkPage, checkYear } from './validate.js';

export interface NewBookInput {
  title: string;
  author: string;
  year?: number | null;
}

export function toBook(row: BookRow): Book {
  return { id: row.id, title: row.title, author: row.author, year: row.year };
}

export class BookService {
  constructor(private readonly deps: DomainDeps) {}

  /** Writes through this handle are announced: each bumps the tags of what it changed. */
  private get db() {
    return this.deps.db.domain;
  }

  /** Newest first. */
  async list(page: Page, reads: Reads): Promise<Book[]> {
    const { limit, offset } = checkPage(page.limit, page.offset);
    const newest = (l: number, o: number) => this.db.selectFrom('books').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(l).offset(o);
    const rows = await reads.read([tags.books], () => statementsOf(this.db).rows('books', newest, [limit, offset]));
    return rows.map(toBook);
  }

  /** In input order, undefined where missing; one query (a DataLoader batch). */
  async byIds(ids: readonly string[], reads: Reads): Promise<(Book | undefined)[]> {
    if (ids.length === 0) return [];
    const unique = [...new Set(ids)];
    const rows = await reads.read(unique.map(tags.book), () =>
      statementsOf(this.db).rows('booksByIds', (list: readonly string[]) => this.db.selectFrom('books').selectAll().where('id', 'in', list), [unique]),
    );
    const byId = new Map(rows.map((row) => [row.id, toBook(row)]));
    return ids.map((id) => byId.get(id));
  }

  /** addBook: write:posts (editors and admins curate the catalogue). */
  async add(caller: Caller, input: NewBookInput): Promise<Book> {
    if (!isSignedIn(caller)) throw new UnauthenticatedError();
    if (!can(caller, 'write:posts')) throw new ForbiddenError();
    const row: BookRow = {
      id: newId(),
      title: checkBookTitle(input.title),
      author: checkBookAuthor(input.author),
      year: input.year === undefined || input.year === null ? null : checkYear(input.year),
      created_at: nowIso(),
    };
    await this.db.insertInto('books').values(row).execute();
    // The new id too: a response may have cached its absence.
    await this.deps.versions.bump([tags.books, tags.book(row.id)]);
    return toBook(row);
  }
}
