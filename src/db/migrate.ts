import { Migrator, type Migration, type MigrationProvider } from 'kysely';
import type { Db } from './connect.js';
import * as m001 from './migrations/001_initial.js';
import * as m002 from './migrations/002_refresh_successor.js';
import * as m003 from './migrations/003_newest_per_key_index.js';
import * as m004 from './migrations/004_drafts_newest_index.js';

// Listed in code, not read from a folder, so the compiled build and the tests run
// exactly the same set; names sort in the order they apply.
const migrations: Record<string, Migration> = {
  '001_initial': m001,
  '002_refresh_successor': m002,
  '003_newest_per_key_index': m003,
  '004_drafts_newest_index': m004,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/**
 * Brings the schema up to date. Kysely's migrator holds a lock while it runs (an
 * advisory lock on PostgreSQL), so instances starting together migrate once.
 */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db: db.kysely, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
