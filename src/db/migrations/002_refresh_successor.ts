import type { Kysely } from 'kysely';

// Migrations are frozen once released: add a new file instead of editing this one.

/**
 * Refresh-token rotation with a grace window (src/auth/sessions.ts): a rotated token
 * keeps its successor for a few seconds, encrypted under a key derived from the
 * rotated token itself, so two refreshes racing with one token both get the same
 * successor instead of the loser looking like a replay. The database never holds a
 * usable token: without the rotated token the ciphertext is useless.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('refresh_tokens').addColumn('successor_ciphertext', 'varchar(255)').execute();
  // Sign-out of every session of a user, and the clean-up of expired sessions.
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_expires_at').execute();
  await db.schema.alterTable('refresh_tokens').dropColumn('successor_ciphertext').execute();
}
