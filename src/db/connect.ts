import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type LogEvent } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import type { Database } from './schema.js';

/**
 * One handle on the configured database. Everything dialect-specific about
 * connecting lives here; queries elsewhere are written once for both databases.
 */
export interface Db {
  kysely: Kysely<Database>;
  dialect: 'sqlite' | 'postgres';
  /** Statements sent since start-up; tests use it to prove batching. */
  readonly queryCount: number;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function connectDatabase(database: Config['database']): Db {
  let queryCount = 0;
  const log = (event: LogEvent) => {
    if (event.level === 'query') queryCount++;
  };

  let kysely: Kysely<Database>;
  if (database.kind === 'sqlite') {
    const file = database.file === ':memory:' ? ':memory:' : resolve(database.file);
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const sqlite = new SQLite(file);
    // WAL lets readers proceed during a write; NORMAL sync is durable across process
    // crashes (only an OS crash can lose the last commits), the usual WAL pairing.
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma('busy_timeout = 5000');
    kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }), log });
  } else {
    const pool = new pg.Pool({
      connectionString: database.url,
      max: database.poolSize,
      connectionTimeoutMillis: 5_000,
      // A query that hangs (server gone mid-statement) must fail, not hold a request forever.
      query_timeout: 15_000,
    });
    // Without a listener an idle client's error (server restart) would crash the process.
    pool.on('error', () => {});
    kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log });
  }

  return {
    kysely,
    dialect: database.kind,
    get queryCount() {
      return queryCount;
    },
    async ping() {
      await sql`select 1`.execute(kysely);
    },
    async close() {
      await kysely.destroy();
    },
  };
}
