import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql, type Dialect, type LogEvent, type SqliteDatabase } from 'kysely';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import { createPostgresPool } from './postgres-pool.js';
import type { Database } from './schema.js';
import { countSingleConnection, type PoolUse } from './pool-use.js';
import { externalChanges, type ExternalChanges } from '../cache/external-changes.js';
import { traceStatements } from './statement-spans.js';
import { Checkpoints } from './checkpoints.js';
import { announcedWrites, trackWrites, type UnannouncedWriteListener } from '../cache/write-tracking.js';

/**
 * One handle on the configured database. Everything dialect-specific about
 * connecting lives here; queries elsewhere are written once for both databases.
 */
export interface Db {
  kysely: Kysely<Database>;
  /**
   * The handle for src/domain: its writes are announced (src/domain bumps the tags of
   * what it changed, docs/decisions.md). A write to users, posts, reactions or books
   * through `kysely` is reported to `onUnannouncedWrite` instead, which invalidates all.
   */
  domain: Kysely<Database>;
  dialect: 'sqlite' | 'postgres';
  /** Statements sent since start-up; tests use it to prove batching. */
  readonly queryCount: number;
  /**
   * SQLite: grows when another process committed to the file (the `user:role` script),
   * checked at most once per event-loop turn; undefined for a turn that cannot tell.
   * PostgreSQL has no such stamp (instances share writes through Redis instead).
   */
  externalChanges: (() => number | undefined) | undefined;
  /** Adds a listener awaited after every committed write to a cached table that src/domain did not announce. */
  onUnannouncedWrite(listener: UnannouncedWriteListener): void;
  /** How the connections are used now, pool by pool (the metrics read it at scrape time). */
  poolUse(): PoolUse[];
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** The tables cached results are read from (src/cache/reads.ts names their tags). */
const CACHED_TABLES: ReadonlySet<string> = new Set(['users', 'posts', 'reactions', 'books']);

export function connectDatabase(database: Config['database']): Db {
  let queryCount = 0;
  const log = (event: LogEvent) => {
    if (event.level === 'query') queryCount++;
  };

  const listeners: UnannouncedWriteListener[] = [];
  const unannounced = async () => {
    for (const listener of listeners) await listener();
  };
  let external: ExternalChanges | undefined;
  let inTransaction = () => false;
  let checkpoints: Checkpoints | undefined;

  let dialect: Dialect;
  let poolUse: () => PoolUse[];
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
    if (file !== ':memory:') checkpoints = new Checkpoints(sqlite, file);
    const statements = withStatementCache(sqlite, checkpoints);
    // observability: SQLite's statements get spans here while tracing is on, and its one connection is counted.
    const counted = countSingleConnection(traceStatements(new SqliteDialect({ database: statements })));
    dialect = counted.dialect;
    poolUse = counted.use;
    external = externalChanges(sqlite, file, () => inTransaction());
  } else {
    const pool = createPostgresPool(database);
    dialect = new PostgresDialect({ pool });
    poolUse = () => pool.use(); // observability:
  }
  const tracking = trackWrites(dialect, CACHED_TABLES, unannounced);
  inTransaction = tracking.inTransaction;
  const kysely = new Kysely<Database>({ dialect: tracking.dialect, log });

  return {
    kysely,
    domain: kysely.withPlugin(announcedWrites),
    dialect: database.kind,
    get queryCount() {
      return queryCount;
    },
    externalChanges: external ? () => external.poll() : undefined,
    onUnannouncedWrite: (listener) => void listeners.push(listener),
    poolUse: () => poolUse(),
    async ping() {
      await sql`select 1`.execute(kysely);
    },
    async close() {
      await checkpoints?.close();
      await kysely.destroy();
      external?.close();
    },
  };
}

/**
 * Kysely's SQLite driver prepares every statement anew; preparing costs more than
 * running a small query. better-sqlite3 statements are reusable, so keep the recent ones.
 * Kysely prepares a statement each time it runs one: a writing one asks for a checkpoint.
 */
function withStatementCache(sqlite: SQLite.Database, checkpoints: Checkpoints | undefined): SqliteDatabase {
  const statements = new LRUCache<string, SQLite.Statement>({ max: 500 });
  return {
    prepare(text: string) {
      let statement = statements.get(text);
      if (!statement) {
        statement = sqlite.prepare(text);
        statements.set(text, statement);
      }
      if (!statement.readonly) checkpoints?.wrote();
      return statement;
    },
    close: () => sqlite.close(),
  };
}
