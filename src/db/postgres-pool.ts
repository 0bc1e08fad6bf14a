import { createRequire } from 'node:module';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import type { PoolUse } from './pool-use.js';
import { isPreparedStatementError, StatementNames } from './statement-names.js';

/**
 * The PostgreSQL connection pool, with deadlines for a database that answers slowly or
 * not at all (README, "Operations under failure"). A slow statement (a held lock, a
 * long plan) is cancelled by PostgreSQL itself after `statementTimeoutMs`, as is a
 * transaction left idle that long; a server that does not answer at all (paused, or a
 * network that drops packets) is given up on by the client a little later, and that
 * connection is discarded, never reused.
 */

/** Default of DATABASE_STATEMENT_TIMEOUT_MS. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 15_000;
/** Waiting for a free connection, or for a new one to be set up, fails after this long. */
export const CONNECT_TIMEOUT_MS = 5_000;
/** The client-side deadline's margin over the server's: PostgreSQL's own cancel comes first when it can. */
const CLIENT_MARGIN_MS = 1_000;

export interface PoolOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs?: number;
  /** Send statements named, so each connection prepares them once (default true). */
  preparedStatements?: boolean;
}

/** Kysely's pool, plus how its connections are used (the pool-use gauges read it). */
export interface CountedPostgresPool extends PostgresPool {
  use(): PoolUse[];
}

/**
 * `pg` loads when a pool is made: a service on SQLite never loads it, nor the fetch stack
 * its runtime check pulls in (~85 ms of CPU at each start; docs/decisions.md, "Start-up").
 * Through `require`, where tracing's instrumentation patches it as it loads.
 */
const loadPg = (): typeof pg => createRequire(import.meta.url)('pg') as typeof pg;

/**
 * Two pools of `poolSize` connections each: one for reads, one for writes and
 * transactions. A commit waiting for the disk, or a write waiting for a lock, holds
 * only a writer's connection, so reads keep being answered meanwhile
 * (docs/decisions.md, "Reads and writes on pools of their own").
 */
export function createPostgresPool(options: PoolOptions): CountedPostgresPool {
  const names = options.preparedStatements === false ? undefined : new StatementNames();
  const reads = openPool(options, names);
  const writes = openPool(options, names);
  // Released clients are handed out again: Kysely (and src/cache/write-tracking.ts) key
  // their per-connection state by the client in WeakMaps, whose entries for a new client
  // each time would live until a full collection (docs/decisions.md, "Nothing per
  // request lives until a full collection"). It keeps at most as many as were out at once.
  const free: RoutedClient[] = [];
  return {
    connect: async () => (free.pop() ?? new RoutedClient(reads, writes, free)).take(),
    async end() {
      await Promise.all([reads.end(), writes.end()]);
    },
    use: () => [reads.use('reads'), writes.use('writes')],
  };
}

/** One checked-out connection of a pool (see `guard`). */
interface Connection {
  query(text: string, parameters: ReadonlyArray<unknown>): Promise<pg.QueryResult>;
  release(): void;
}

interface Pool {
  checkout(): Promise<Connection>;
  end(): Promise<void>;
  use(pool: PoolUse['pool']): PoolUse;
}

function openPool(options: PoolOptions, names: StatementNames | undefined): Pool {
  const statementTimeoutMs = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const pool = new (loadPg().Pool)({
    connectionString: options.url,
    max: options.poolSize,
    // Also bounds the wait for a free connection while all of them are busy, so a
    // stalled database fails requests instead of queueing them without end.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: statementTimeoutMs,
    // A transaction left open by a client that stopped (a frozen instance, a partition)
    // would hold its row locks against every other instance: PostgreSQL ends it.
    idle_in_transaction_session_timeout: statementTimeoutMs,
    query_timeout: statementTimeoutMs + CLIENT_MARGIN_MS,
  });
  // Without a listener an idle client's error (server restart) would crash the process.
  pool.on('error', () => {});
  // The pool listens only while a client is idle. A client checked out between two
  // statements (a transaction) whose connection breaks (PostgreSQL stopped or
  // restarted) emits 'error' with nobody listening, which would crash the process.
  // The statement in flight fails on its own; the broken client is dropped on release.
  pool.on('connect', (client) => client.on('error', () => {}));

  const guarded = new WeakMap<pg.PoolClient, Connection>();
  return {
    async checkout() {
      const client = await pool.connect();
      let wrapper = guarded.get(client);
      if (!wrapper) {
        wrapper = guard(client, names);
        guarded.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
    use: (name) => ({ pool: name, max: options.poolSize, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
}

/**
 * What Kysely checks out: the connection is taken at the first statement, from the read
 * pool for a plain `select` and from the write pool for anything else (`begin`, an
 * insert, an update); the statements after it run on that same connection.
 */
class RoutedClient implements PostgresPoolClient {
  #checkout: Promise<Connection> | undefined;
  #client: Connection | undefined;
  #out = false;

  constructor(
    private readonly reads: Pool,
    private readonly writes: Pool,
    /** Where it goes back once released, to be handed out again. */
    private readonly free: RoutedClient[],
  ) {}

  query(text: unknown, parameters?: ReadonlyArray<unknown>): any {
    if (typeof text !== 'string') throw new Error('Streamed results are not used'); // Kysely's cursors; Inkwell does not stream
    if (this.#client) return this.#client.query(text, parameters ?? []);
    if (!this.#checkout) {
      const checkout = (READ.test(text) ? this.reads : this.writes).checkout();
      this.#checkout = checkout;
      // Kept only while it is still this checkout's (not released and handed out again).
      checkout.then((client) => this.#checkout === checkout && (this.#client = client), () => {});
    }
    return this.#checkout.then((client) => client.query(text, parameters ?? []));
  }

  /** Handed out: in use until released. */
  take(): this {
    this.#out = true;
    return this;
  }

  release(): void {
    if (!this.#out) return; // released already: never in the free list twice
    this.#out = false;
    if (this.#client) this.#client.release();
    else this.#checkout?.then((client) => client.release(), () => {});
    this.#client = undefined;
    this.#checkout = undefined;
    this.free.push(this);
  }
}

/** A statement that only reads; a `with` (which may write) goes to the writers. */
const READ = /^\s*select\b/i;

/**
 * pg's `query_timeout` rejects the statement but keeps the connection, whose answer may
 * still come: the next statement would queue behind it. So after such a timeout the
 * connection refuses further statements (a transaction's ROLLBACK fails at once rather
 * than waiting again) and goes back to the pool as broken, which closes it.
 *
 * Reads and writes go named when `names` is given (src/db/statement-names.ts). A named
 * statement the server cannot run prepared is sent again unnamed outside a transaction
 * (inside one, the transaction has failed and the error stands); that connection then
 * sends everything unnamed and is closed on release, so the next one prepares afresh.
 */
function guard(client: pg.PoolClient, names: StatementNames | undefined): Connection {
  let abandoned = false;
  let unprepared = false;
  const failed = (error: unknown): never => {
    if (error instanceof Error && error.message === 'Query read timeout') abandoned = true;
    throw error;
  };
  const query = (text: string, parameters: ReadonlyArray<unknown>): Promise<pg.QueryResult> => {
    if (abandoned) return Promise.reject(new Error('Database connection abandoned after a timeout'));
    const values = parameters as unknown[];
    const name = names && !unprepared && PREPARABLE.test(text) ? names.nameOf(text, values?.length ?? 0) : undefined;
    if (name === undefined) return client.query(text, values).catch(failed);
    return client.query({ name, text, values }).catch((error: unknown) => {
      if (!isPreparedStatementError(error)) return failed(error);
      unprepared = true;
      if (client.getTransactionStatus() !== 'I') return failed(error);
      return client.query(text, values).catch(failed);
    });
  };
  return {
    query,
    release() {
      if (abandoned) client.release(new Error('Database connection abandoned after a timeout'));
      else if (unprepared) client.release(new Error('Database connection with a stale prepared statement'));
      else client.release();
    },
  };
}

/** Statements worth preparing; transaction control (`begin`, `commit`, …) is not. */
const PREPARABLE = /^\s*(select|insert|update|delete|with)\b/i;
