import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type Dialect, type LogEvent, type SqliteDatabase } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import { createPostgresPool } from './postgres-pool.js';
import type { Database } from './schema.js';
import { countSingleConnection, type PoolUse } from './pool-use.js';
import { externalChangeCounter, type ChangeCounter } from './sqlite-changes.js';
import { traceStatements } from './statement-spans.js';
import { trackWrites, type CommittedWriteListener } from './write-tracking.js';

/**
 * One handle on the configured database. Everything dialect-specific about
 * connecting lives here; queries elsewhere are written once for both databases.
 */
export interface Db {
  kysely: Kysely<Database>;
  dialect: 'sqlite' | 'postgres';
  /** Statements sent since start-up; tests use it to prove batching. */
  readonly queryCount: number;
  /**
   * Changes whenever data was committed: by this process (counted as writes commit) or,
   * on SQLite, by another process on the same file (`PRAGMA data_version`), such as the
   * `user:role` operator script. Result caches are valid only while it stays the same.
   */
  changeStamp(): string;
  /** How the connections are used now (the metrics read it at scrape time). */
  poolUse(): PoolUse;
  /** Adds a listener awaited after every committed write of this process. */
  onCommittedWrite(listener: CommittedWriteListener): void;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export function connectDatabase(database: Config['database']): Db {
  let queryCount = 0;
  const log = (event: LogEvent) => {
    if (event.level === 'query') queryCount++;
  };

  let writes = 0;
  const listeners: CommittedWriteListener[] = [];
  const committed = async () => {
    writes++;
    for (const listener of listeners) await listener();
  };
  let external: ChangeCounter = { read: () => 0, close: () => {} };

  let dialect: Dialect;
  let poolUse: () => PoolUse;
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
    // observability: SQLite's statements get spans here while tracing is on, and its one connection is counted.
    const counted = countSingleConnection(traceStatements(new SqliteDialect({ database: withStatementCache(sqlite) })));
    dialect = counted.dialect;
    poolUse = counted.use;
    external = externalChangeCounter(sqlite, file);
  } else {
    const pool = createPostgresPool(database);
    dialect = new PostgresDialect({ pool });
    const max = database.poolSize;
    poolUse = () => ({ max, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }); // observability:
  }
  const kysely = new Kysely<Database>({ dialect: trackWrites(dialect, committed), log });

  return {
    kysely,
    dialect: database.kind,
    get queryCount() {
      return queryCount;
    },
    changeStamp: () => `${writes}.${external.read()}`,
    poolUse: () => poolUse(),
    onCommittedWrite: (listener) => void listeners.push(listener),
    async ping() {
      await sql`select 1`.execute(kysely);
    },
    async close() {
      await kysely.destroy();
      external.close();
    },
  };
}

/**
 * Kysely's SQLite driver prepares every statement anew; preparing costs more than
 * running a small query. better-sqlite3 statements are reusable, so keep the recent ones.
 */
function withStatementCache(sqlite: SQLite.Database): SqliteDatabase {
  const statements = new LRUCache<string, SQLite.Statement>({ max: 500 });
  return {
    prepare(text: string) {
      let statement = statements.get(text);
      if (!statement) {
        statement = sqlite.prepare(text);
        statements.set(text, statement);
      }
      return statement;
    },
    close: () => sqlite.close(),
  };
}
