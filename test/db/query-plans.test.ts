import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CompiledQuery, type Compilable } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { draftAuthors } from '../../src/domain/post-queries.js';

/**
 * Reads whose cost must not grow with the table, checked by SQLite's own plan: a plan
 * that scans `posts` reads every row however few it returns (docs/decisions.md, "Draft
 * authors through a drafts index").
 */

let dir: string;
let db: Db;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'inkwell-plans-'));
  db = connectDatabase({ kind: 'sqlite', file: join(dir, 'plans.db') });
  await migrateToLatest(db);
});
afterAll(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** SQLite's plan of a statement as prepared, its values bound: one line per step. */
async function planOf(query: Compilable): Promise<string> {
  const { sql, parameters } = query.compile();
  const result = await db.kysely.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${sql}`, [...parameters]));
  return result.rows.map((row) => row.detail).join(' | ');
}

describe('query plans on SQLite', () => {
  it('draft authors newer than a page are read from the drafts index, from the page on', async () => {
    const plan = await planOf(draftAuthors(db.domain, 101, { at: '2026-11-29T00:00:00.000Z', id: 'p' }));
    expect(plan).toContain('SEARCH posts USING INDEX posts_drafts_newest');
    expect(plan).not.toMatch(/\bSCAN posts\b/);
  });
});
