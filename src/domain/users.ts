import type { UserRow, UserUpdate } from '../db/schema.js';
import { BadUserInputError, ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../errors.js';
import { channels } from '../realtime/pubsub.js';
import { can, canSeeUnpublished, isRole, isSelf, isSignedIn, type Caller, type Role } from './caller.js';
import type { DomainDeps } from './deps.js';
import { newId, nowIso } from './ids.js';
import { NO_READS, tags, type Reads } from '../cache/reads.js';
import { SharedBatch } from '../db/shared-batch.js';
import { MAX_NAMED_PARAMETERS } from '../db/statement-names.js';
import { statementsOf } from '../db/statements.js';
import type { User } from './types.js';
import {
  checkAge,
  checkAvatar,
  checkEmail,
  checkId,
  checkName,
  checkPage,
  checkRole,
  isUniqueViolation,
  normaliseEmail,
} from './validate.js';

export interface UserListArgs {
  role?: string | null;
  limit: number;
  offset: number;
}

export interface NewAccount {
  name: string;
  /** Null for an external account whose provider gave no email. */
  email: string | null;
  passwordHash?: string | null;
  role?: Role;
}

export interface CreateUserInput {
  name: string;
  email: string;
  age?: number | null;
  role?: string | null;
}

/**
 * `undefined` leaves a field unchanged. An explicit `null` clears the optional fields
 * (age, avatar) and is refused for the required ones (name, email, role): GraphQL lets
 * a client send null for any nullable argument, and "clear the name" has no meaning.
 */
export interface UserPatch {
  name?: string | null;
  email?: string | null;
  age?: number | null;
  avatar?: string | null;
  role?: string | null;
}

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    age: row.age,
    avatar: row.avatar,
    // Roles are only ever written through checkRole; an unknown value means a hand-edited row.
    role: isRole(row.role) ? row.role : 'user',
    createdAt: row.created_at,
  };
}

/** PostgreSQL returns count(*) as a bigint string, SQLite as a number. */
const toCount = (value: string | number | bigint): number => Number(value);

export class UserService {
  /** Rows by id for every request at once (src/db/shared-batch.ts): the same for every caller. */
  private readonly rowsById = new SharedBatch<UserRow>(
    (ids) => this.statements.rows('usersByIds', (list: readonly string[]) => this.db.selectFrom('users').selectAll().where('id', 'in', list), [ids]),
    MAX_NAMED_PARAMETERS,
  );

  constructor(private readonly deps: DomainDeps) {}

  /** Writes through this handle are announced: each bumps the tags of what it changed. */
  private get db() {
    return this.deps.db.domain;
  }

  private get statements() {
    return statementsOf(this.deps.db.domain);
  }

  /** Newest first. `reads`: see src/cache/reads.ts (the account pages read uncached). */
  async list(_caller: Caller, args: UserListArgs, reads: Reads = NO_READS): Promise<User[]> {
    const page = checkPage(args.limit, args.offset);
    const role = args.role === undefined || args.role === null ? undefined : checkRole(args.role);
    const newest = (limit: number, offset: number) =>
      this.db.selectFrom('users').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).offset(offset);
    const rows = await reads.read([tags.users], () =>
      role
        ? this.statements.rows('usersByRole', (r: string, l: number, o: number) => newest(l, o).where('role', '=', r), [role, page.limit, page.offset])
        : this.statements.rows('users', newest, [page.limit, page.offset]),
    );
    return rows.map(toUser);
  }

  /** In input order, undefined where missing; one query (a DataLoader batch). Uncached callers may omit `reads`. */
  async byIds(ids: readonly string[], reads: Reads = NO_READS): Promise<(User | undefined)[]> {
    if (ids.length === 0) return [];
    const unique = [...new Set(ids)];
    const rows = await reads.read(unique.map(tags.user), () => this.rowsById.rows(unique));
    const byId = new Map<string, UserRow>();
    for (const row of rows) byId.set(row.id, row);
    return ids.map((id) => {
      const row = byId.get(id);
      return row && toUser(row);
    });
  }

  /**
   * Per author, the posts the caller may see; one grouped query for the whole batch,
   * the same for every caller: only for an author with drafts is the caller asked.
   */
  async postsCountByAuthors(caller: Caller, authorIds: readonly string[], reads: Reads): Promise<number[]> {
    if (authorIds.length === 0) return [];
    const unique = [...new Set(authorIds)];
    const count = (list: readonly string[]) =>
      this.db
        .selectFrom('posts')
        .select((eb) => ['author_id', eb.fn.countAll<string | number>().as('total'), eb.fn.sum<string | number>('published').as('published')])
        .where('author_id', 'in', list)
        .groupBy('author_id');
    const rows = await reads.read(unique.map(tags.postsBy), () => this.statements.rows('postsCount', count, [unique]));
    const counts = new Map<string, number>();
    for (const row of rows) {
      const total = toCount(row.total);
      const published = toCount(row.published);
      counts.set(row.author_id, total === published || canSeeUnpublished(caller, row.author_id) ? total : published);
    }
    return authorIds.map((id) => counts.get(id) ?? 0);
  }

  /** Stores a new account without a permission check (registration, external sign-in). */
  async insertAccount(input: NewAccount & { age?: number | null }): Promise<User> {
    const row: UserRow = {
      id: newId(),
      name: checkName(input.name),
      email: input.email === null ? null : checkEmail(input.email),
      age: input.age === undefined || input.age === null ? null : checkAge(input.age),
      avatar: null,
      role: input.role === undefined ? 'user' : checkRole(input.role),
      password_hash: input.passwordHash ?? null,
      created_at: nowIso(),
    };
    try {
      await this.db.insertInto('users').values(row).execute();
    } catch (err) {
      // The unique index decides, not a prior select: two concurrent sign-ups of one
      // email would both pass a select, only one passes the index.
      if (isUniqueViolation(err)) throw new ConflictError('Email already registered');
      throw err;
    }
    // The new id too: a response may have cached its absence.
    await this.deps.versions.bump([tags.users, tags.user(row.id)]);
    const user = toUser(row);
    await this.deps.pubsub.publish(channels.userCreated(), user).catch(() => {
      // Subscribers may miss events during a pub/sub outage (docs/operations.md); the account exists.
    });
    return user;
  }

  /** createUser: manage:users. */
  async create(caller: Caller, input: CreateUserInput): Promise<User> {
    requireManager(caller);
    try {
      return await this.insertAccount({
        name: input.name,
        email: input.email,
        age: input.age,
        role: input.role === undefined || input.role === null ? undefined : checkRole(input.role),
      });
    } catch (err) {
      // In GraphQL a taken email is a problem with the `email` argument.
      if (err instanceof ConflictError) throw new BadUserInputError('email', 'Email already in use');
      throw err;
    }
  }

  /** updateUser: the user themself (without `role`) or manage:users. */
  async update(caller: Caller, id: string, patch: UserPatch): Promise<User> {
    if (!isSignedIn(caller)) throw new UnauthenticatedError();
    const manager = can(caller, 'manage:users');
    if (!manager && !isSelf(caller, id)) throw new ForbiddenError();
    if (!manager && patch.role !== undefined) throw new ForbiddenError('Only user managers may change a role');
    checkId('id', id);

    const changes: UserUpdate = {};
    if (patch.name !== undefined) changes.name = checkName(required('name', patch.name));
    if (patch.email !== undefined) changes.email = checkEmail(required('email', patch.email));
    if (patch.role !== undefined) changes.role = checkRole(required('role', patch.role));
    if (patch.age !== undefined) changes.age = patch.age === null ? null : checkAge(patch.age);
    if (patch.avatar !== undefined) changes.avatar = patch.avatar === null ? null : checkAvatar(patch.avatar);

    if (Object.keys(changes).length === 0) {
      const row = await this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) throw new NotFoundError('User');
      return toUser(row);
    }
    let updated;
    try {
      // The row as this update left it, from the same statement.
      updated = await this.db.updateTable('users').set(changes).where('id', '=', id).returningAll().executeTakeFirst();
    } catch (err) {
      if (isUniqueViolation(err)) throw new BadUserInputError('email', 'Email already in use');
      throw err;
    }
    if (!updated) throw new NotFoundError('User');
    await this.deps.versions.bump(changedUser(id));
    return toUser(updated);
  }

  /**
   * deleteUser: the user themself or manage:users. One transaction removes the user's
   * reactions, posts (with their reactions), sessions with their refresh tokens and
   * external accounts; explicit deletes, so it holds without ON DELETE CASCADE too.
   */
  async delete(caller: Caller, id: string): Promise<boolean> {
    if (!isSignedIn(caller)) throw new UnauthenticatedError();
    if (!can(caller, 'manage:users') && !isSelf(caller, id)) throw new ForbiddenError();
    checkId('id', id);

    const changed = await this.db.transaction().execute(async (trx) => {
      const user = await trx.selectFrom('users').select('id').where('id', '=', id).executeTakeFirst();
      if (!user) throw new NotFoundError('User');
      // Every post that changes: the user's own (gone), and those whose reactions lose theirs.
      const own = await trx.selectFrom('posts').select('id').where('author_id', '=', id).execute();
      const reacted = await trx.selectFrom('reactions').select('post_id').where('user_id', '=', id).distinct().execute();
      const ownPosts = trx.selectFrom('posts').select('id').where('author_id', '=', id);
      await trx
        .deleteFrom('reactions')
        .where((eb) => eb.or([eb('user_id', '=', id), eb('post_id', 'in', ownPosts)]))
        .execute();
      await trx.deleteFrom('posts').where('author_id', '=', id).execute();
      const sessions = trx.selectFrom('sessions').select('id').where('user_id', '=', id);
      await trx.deleteFrom('refresh_tokens').where('session_id', 'in', sessions).execute();
      await trx.deleteFrom('sessions').where('user_id', '=', id).execute();
      await trx.deleteFrom('oauth_accounts').where('user_id', '=', id).execute();
      await trx.deleteFrom('users').where('id', '=', id).execute();
      return { own: own.map((r) => r.id), reacted: reacted.map((r) => r.post_id) };
    });
    await this.deps.versions.bump([
      ...changedUser(id),
      tags.postsBy(id),
      ...(changed.own.length > 0 ? [tags.posts] : []),
      ...changed.own.flatMap((postId) => [tags.post(postId), tags.reactions(postId), tags.likes(postId)]),
      ...changed.reacted.flatMap((postId) => [tags.reactions(postId), tags.likes(postId)]),
    ]);
    return true;
  }

  /** For sign-in: the account with its password hash, by normalised email. */
  async findByEmail(email: string): Promise<(User & { passwordHash: string | null }) | undefined> {
    const row = await this.db
      .selectFrom('users')
      .selectAll()
      .where('email', '=', normaliseEmail(email))
      .executeTakeFirst();
    return row ? { ...toUser(row), passwordHash: row.password_hash } : undefined;
  }

  /** For sign-in: replaces a password hash (re-hashing at a higher bcrypt cost). No API reads it: nothing to bump. */
  async setPasswordHash(id: string, passwordHash: string): Promise<void> {
    await this.db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', id).execute();
  }

  /** For the operator script: no caller, the operator has the database. */
  async setRole(email: string, role: string): Promise<User> {
    const checked = checkRole(role);
    const normalised = normaliseEmail(email);
    const result = await this.db.updateTable('users').set({ role: checked }).where('email', '=', normalised).executeTakeFirst();
    if (result.numUpdatedRows === 0n) throw new NotFoundError('User');
    const row = await this.db.selectFrom('users').selectAll().where('email', '=', normalised).executeTakeFirstOrThrow();
    // In another process (the operator script) on SQLite these bumps reach nobody; the
    // service sees the commit on the file instead (src/cache/external-changes.ts). With Redis they do.
    await this.deps.versions.bump(changedUser(row.id));
    return toUser(row);
  }
}

/** A user's row changed: the user, and the list (its order, role filter and rows). */
function changedUser(id: string): string[] {
  return [tags.user(id), tags.users];
}

function requireManager(caller: Caller): void {
  if (!isSignedIn(caller)) throw new UnauthenticatedError();
  if (!can(caller, 'manage:users')) throw new ForbiddenError();
}

function required<T>(argument: string, value: T | null): T {
  if (value === null) throw new BadUserInputError(argument, `${argument} cannot be null`);
  return value;
}
