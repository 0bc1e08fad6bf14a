import { createHash, randomBytes } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import { SharedBatch } from '../db/shared-batch.js';
import { MAX_NAMED_PARAMETERS } from '../db/statement-names.js';
import { statementsOf } from '../db/statements.js';
import { newId } from '../domain/ids.js';
import { tags } from '../cache/reads.js';
import type { VersionStore } from '../cache/versions.js';
import type { AuthDatabase } from './db.js';
import { SessionMemo } from '../cache/session-memo.js';
import { sealSuccessor as seal, unsealSuccessor } from './successor.js';

/**
 * Sessions and their refresh tokens (docs/accounts.md): a session ends 30 days after
 * sign-in at the latest or when revoked, and access tokens are checked against it on
 * every request. Each refresh rotates the token; presenting a rotated token again
 * revokes the session, except within a short grace window, where racing refreshes get
 * the same successor (docs/design-notes.md#sessions).
 */

export const SESSION_MAX_AGE_MS = 30 * 24 * 60 * 60 * 1000;
export const REFRESH_TOKEN_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const REFRESH_GRACE_MS = 2_000;

const TOKEN_BYTES = 32;
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export interface SessionInfo {
  id: string;
  userId: string;
  /** The absolute end of the session (ISO 8601). */
  expiresAt: string;
}

export type RefreshOutcome =
  | { ok: true; session: SessionInfo; refreshToken: string; /** Answered from the grace window. */ graced: boolean }
  | { ok: false; reason: 'unknown' | 'expired' | 'revoked' | 'reused' };

/** A live session with its user, as the caller resolver reads it on every request. */
export interface SessionUser {
  sessionId: string;
  expiresAt: string;
  user: { id: string; name: string; email: string | null; role: string };
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

function newToken(): string {
  return randomBytes(TOKEN_BYTES).toString('base64url');
}

type Db = Kysely<AuthDatabase> | Transaction<AuthDatabase>;

interface TokenRow {
  token_hash: string;
  session_id: string;
  expires_at: string;
  rotated_at: string | null;
  successor_ciphertext: string | null;
  user_id: string;
  session_expires_at: string;
  revoked_at: string | null;
}

export class SessionStore {
  private readonly memo: SessionMemo<SessionUser> | undefined;

  constructor(
    private readonly db: Kysely<AuthDatabase>,
    private readonly options: { now?: () => number; graceMs?: number; versions?: VersionStore } = {},
  ) {
    // Only where every writer's changes reach the versions: on PostgreSQL without Redis a
    // revocation by another instance, or a role set by the operator command, would not.
    const local = options.versions?.local;
    this.memo = local?.seesOtherProcesses ? new SessionMemo(local) : undefined;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private get graceMs(): number {
    return this.options.graceMs ?? REFRESH_GRACE_MS;
  }

  /** Starts a session for a user who just proved who they are; returns its first refresh token. */
  async create(userId: string): Promise<{ session: SessionInfo; refreshToken: string }> {
    const now = this.now();
    const session: SessionInfo = { id: newId(), userId, expiresAt: iso(now + SESSION_MAX_AGE_MS) };
    const refreshToken = newToken();
    await this.db.transaction().execute(async (trx) => {
      await this.pruneExpired(trx, userId, now);
      await trx
        .insertInto('sessions')
        .values({ id: session.id, user_id: userId, created_at: iso(now), expires_at: session.expiresAt, revoked_at: null })
        .execute();
      await this.insertToken(trx, refreshToken, session, now);
    });
    return { session, refreshToken };
  }

  /** Exchanges a refresh token for its successor (see the module comment). */
  async rotate(token: string): Promise<RefreshOutcome> {
    if (!TOKEN_SHAPE.test(token)) return { ok: false, reason: 'unknown' };
    const hash = hashToken(token);
    const now = this.now();

    let reusedIn: string | undefined;
    const outcome = await this.db.transaction().execute(async (trx): Promise<RefreshOutcome> => {
      let row = await loadToken(trx, hash);
      if (!row) return { ok: false, reason: 'unknown' };
      const dead = deadReason(row, now);
      if (dead) return { ok: false, reason: dead };
      const session: SessionInfo = { id: row.session_id, userId: row.user_id, expiresAt: row.session_expires_at };

      if (row.rotated_at === null) {
        const successor = newToken();
        const claimed = await trx
          .updateTable('refresh_tokens')
          .set({ rotated_at: iso(now), successor_ciphertext: seal(successor, token) })
          .where('token_hash', '=', hash)
          .where('rotated_at', 'is', null)
          .executeTakeFirst();
        if (claimed.numUpdatedRows === 1n) {
          await this.insertToken(trx, successor, session, now);
          // Successors kept for earlier rotations are past their window: erase them.
          await trx
            .updateTable('refresh_tokens')
            .set({ successor_ciphertext: null })
            .where('session_id', '=', session.id)
            .where('successor_ciphertext', 'is not', null)
            .where('rotated_at', '<', iso(now - this.graceMs))
            .execute();
          return { ok: true, session, refreshToken: successor, graced: false };
        }
        // Another request rotated it between our read and our update: read its result.
        row = await loadToken(trx, hash);
        if (!row || row.rotated_at === null) return { ok: false, reason: 'unknown' };
      }

      const successor = await this.graceSuccessor(trx, row, token, now);
      if (successor) return { ok: true, session, refreshToken: successor, graced: true };

      // Reuse of a rotated token: end the whole family, newest token included.
      await this.revokeIn(trx, session.id, now);
      reusedIn = session.id;
      return { ok: false, reason: 'reused' };
    });
    if (reusedIn) await this.revoked(reusedIn);
    return outcome;
  }

  /** Ends a session; its access and refresh tokens stop working at once. */
  async revoke(sessionId: string): Promise<void> {
    await this.revokeIn(this.db, sessionId, this.now());
    await this.revoked(sessionId);
  }

  /** After a revocation committed: remembered lookups of the session are void (./session-memo.ts). */
  private async revoked(sessionId: string): Promise<void> {
    await this.options.versions?.bump([tags.session(sessionId)]);
  }

  /**
   * Ends the session a refresh token belongs to, whatever the token's own state (sign-out
   * after the access token is gone). True when the token named a session.
   */
  async revokeByRefreshToken(token: string): Promise<boolean> {
    if (!TOKEN_SHAPE.test(token)) return false;
    const row = await this.db.selectFrom('refresh_tokens').select('session_id').where('token_hash', '=', hashToken(token)).executeTakeFirst();
    if (!row) return false;
    await this.revoke(row.session_id);
    return true;
  }

  /**
   * The live session with its user's current record, or undefined (revoked, expired,
   * deleted). `userId`, the user the credential names, lets the read be remembered.
   */
  async lookup(sessionId: string, userId?: string): Promise<SessionUser | undefined> {
    const found = userId !== undefined && this.memo ? await this.remembered(this.memo, sessionId, userId) : await this.read(sessionId);
    return found && Date.parse(found.expiresAt) > this.now() ? found : undefined;
  }

  private async remembered(memo: SessionMemo<SessionUser>, sessionId: string, userId: string): Promise<SessionUser | undefined> {
    const known = memo.get(sessionId, userId);
    if (known) return known;
    const versions = memo.before(sessionId, userId);
    const found = await this.read(sessionId);
    if (found && versions && found.user.id === userId) memo.remember(sessionId, versions, found);
    return found;
  }

  /** The session with its user, unless it is missing or revoked (expiry is checked on every use). */
  private async read(sessionId: string): Promise<SessionUser | undefined> {
    const row = (await this.rowsById.rows([sessionId])).find((r) => r.session_id === sessionId);
    if (!row || row.revoked_at !== null) return undefined;
    return {
      sessionId: row.session_id,
      expiresAt: row.expires_at,
      user: { id: row.user_id, name: row.name, email: row.email, role: row.role },
    };
  }

  /**
   * Sessions with their users, for every signed-in request at once (src/db/shared-batch.ts):
   * each request then reads its session in the statement of its event-loop turn.
   */
  private readonly rowsById = new SharedBatch((ids: readonly string[]) => {
    const withUsers = (list: readonly string[]) =>
      this.db
        .selectFrom('sessions')
        .innerJoin('users', 'users.id', 'sessions.user_id')
        .select([
          'sessions.id as session_id',
          'sessions.expires_at',
          'sessions.revoked_at',
          'users.id as user_id',
          'users.name',
          'users.email',
          'users.role',
        ])
        .where('sessions.id', 'in', list);
    return statementsOf(this.db).rows('sessionsWithUsers', withUsers, [ids]);
  }, MAX_NAMED_PARAMETERS);

  /**
   * Within the grace window, and while it is unused, the successor the first rotation
   * issued; otherwise undefined (which means reuse).
   */
  private async graceSuccessor(trx: Db, row: TokenRow, token: string, now: number): Promise<string | undefined> {
    if (row.rotated_at === null || row.successor_ciphertext === null) return undefined;
    if (now - Date.parse(row.rotated_at) > this.graceMs) return undefined;
    const successor = unsealSuccessor(row.successor_ciphertext, token);
    if (!successor || !TOKEN_SHAPE.test(successor)) return undefined;
    const next = await trx
      .selectFrom('refresh_tokens')
      .select(['rotated_at', 'expires_at'])
      .where('token_hash', '=', hashToken(successor))
      .executeTakeFirst();
    if (!next || next.rotated_at !== null || Date.parse(next.expires_at) <= now) return undefined;
    return successor;
  }

  private async insertToken(trx: Db, token: string, session: SessionInfo, now: number): Promise<void> {
    const expires = Math.min(now + REFRESH_TOKEN_TTL_MS, Date.parse(session.expiresAt));
    await trx
      .insertInto('refresh_tokens')
      .values({
        token_hash: hashToken(token),
        session_id: session.id,
        created_at: iso(now),
        expires_at: iso(expires),
        rotated_at: null,
        successor_ciphertext: null,
      })
      .execute();
  }

  private async revokeIn(db: Db, sessionId: string, now: number): Promise<void> {
    await db
      .updateTable('sessions')
      .set({ revoked_at: iso(now) })
      .where('id', '=', sessionId)
      .where('revoked_at', 'is', null)
      .execute();
  }

  /** A user's sessions that ended more than a day ago go, with their tokens, when they sign in again. */
  private async pruneExpired(trx: Db, userId: string, now: number): Promise<void> {
    const cutoff = iso(now - 24 * 60 * 60 * 1000);
    const ended = trx
      .selectFrom('sessions')
      .select('id')
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('revoked_at', '<', cutoff)]));
    await trx.deleteFrom('refresh_tokens').where('session_id', 'in', ended).execute();
    await trx
      .deleteFrom('sessions')
      .where('user_id', '=', userId)
      .where((eb) => eb.or([eb('expires_at', '<', cutoff), eb('revoked_at', '<', cutoff)]))
      .execute();
  }
}

async function loadToken(db: Db, hash: string): Promise<TokenRow | undefined> {
  return db
    .selectFrom('refresh_tokens')
    .innerJoin('sessions', 'sessions.id', 'refresh_tokens.session_id')
    .select([
      'refresh_tokens.token_hash',
      'refresh_tokens.session_id',
      'refresh_tokens.expires_at',
      'refresh_tokens.rotated_at',
      'refresh_tokens.successor_ciphertext',
      'sessions.user_id',
      'sessions.expires_at as session_expires_at',
      'sessions.revoked_at',
    ])
    .where('refresh_tokens.token_hash', '=', hash)
    .executeTakeFirst();
}

function deadReason(row: TokenRow, now: number): 'revoked' | 'expired' | undefined {
  if (row.revoked_at !== null) return 'revoked';
  if (Date.parse(row.session_expires_at) <= now || Date.parse(row.expires_at) <= now) return 'expired';
  return undefined;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
