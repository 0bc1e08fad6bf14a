import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { query } from './postgres.js';
import { testBackend } from './server.js';

/**
 * The database (and, on PostgreSQL, Redis) for service *processes* started by a test
 * (`test/system/scale/instances.ts`), on the current project's backend: a SQLite file in a
 * temporary folder, or a fresh database of the postgres project's cluster with a Redis
 * key prefix of its own. `rows` runs one statement on the database directly, from the
 * test, with `?` placeholders on both.
 */
export interface ProcessBackend {
  kind: 'sqlite' | 'postgres';
  /** DATABASE_URL and, on PostgreSQL, REDIS_URL and REDIS_KEY_PREFIX. */
  env: Record<string, string>;
  rows<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  drop(): Promise<void>;
}

export async function processBackend(): Promise<ProcessBackend> {
  const id = randomBytes(5).toString('hex');
  if (testBackend === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'inkwell-proc-'));
    const file = join(dir, 'inkwell.db');
    return {
      kind: 'sqlite',
      env: { DATABASE_URL: `file:${file}` },
      async rows<T>(sql: string, params: unknown[] = []) {
        // A connection per read: the service process may have been killed mid-write;
        // opening the file is what recovers its WAL, as the restarted service would.
        const db = new SQLite(file);
        try {
          const statement = db.prepare(sql);
          if (statement.reader) return statement.all(...params) as T[];
          statement.run(...params);
          return [];
        } finally {
          db.close();
        }
      },
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  const adminUrl = process.env.INKWELL_TEST_POSTGRES_URL;
  const redisUrl = process.env.INKWELL_TEST_REDIS_URL;
  if (!adminUrl || !redisUrl) throw new Error('the postgres project provides INKWELL_TEST_POSTGRES_URL and INKWELL_TEST_REDIS_URL');
  const name = `inkwell_proc_${id}`;
  await query(adminUrl, `create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  return {
    kind: 'postgres',
    env: { DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `proc-${id}:` },
    async rows<T>(sql: string, params: unknown[] = []) {
      let n = 0;
      return (await query(databaseUrl, sql.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
    },
    drop: async () => {
      await query(adminUrl, `drop database if exists ${name} with (force)`).catch(() => {});
    },
  };
}
