import type { Kysely } from 'kysely';
import type { Db } from '../db/connect.js';
import type { Database, RefreshTokensTable } from '../db/schema.js';

/**
 * The database as the account area sees it: the shared tables plus the column that
 * migration 002 adds for refresh-token rotation. Kept here so the shared schema types
 * stay as they are for the other areas.
 */
export interface AuthDatabase extends Omit<Database, 'refresh_tokens'> {
  refresh_tokens: RefreshTokensTable & { successor_ciphertext: string | null };
}

export function authDb(db: Db): Kysely<AuthDatabase> {
  return db.kysely as unknown as Kysely<AuthDatabase>;
}
