import type { DatabaseConnection, Dialect, Driver, TransactionSettings } from 'kysely';

/**
 * How the database's connections are used, for the metrics (README, "Observability").
 * PostgreSQL's two pools (reads; writes and transactions) count their own; SQLite has
 * one connection, which Kysely's driver lends to one query or transaction at a time, so
 * its "pool" is that connection and the queue of queries waiting for it — counted here
 * by wrapping the driver's acquire and release (nothing per statement).
 */
export interface PoolUse {
  /** PostgreSQL: `reads` or `writes` (src/db/postgres-pool.ts); SQLite: `shared`, its one connection. */
  pool: 'reads' | 'writes' | 'shared';
  /** Connections the pool may open. */
  max: number;
  /** Connections open now (in use or idle). */
  open: number;
  /** Open connections nobody holds. */
  idle: number;
  /** Queries or transactions waiting for a connection. */
  waiting: number;
}

class CountingDriver implements Driver {
  inUse = 0;
  waiting = 0;

  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  acquireConnection(): Promise<DatabaseConnection> {
    this.waiting++;
    return this.inner.acquireConnection().then(
      (connection) => {
        this.waiting--;
        this.inUse++;
        return connection;
      },
      (error: unknown) => {
        this.waiting--;
        throw error;
      },
    );
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return this.inner.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.inner.rollbackTransaction(connection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    this.inUse--;
    return this.inner.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** SQLite's single connection: the dialect that counts its use, and the reading. */
export function countSingleConnection(dialect: Dialect): { dialect: Dialect; use(): PoolUse[] } {
  let driver: CountingDriver | undefined;
  return {
    dialect: {
      createAdapter: () => dialect.createAdapter(),
      createDriver: () => (driver = new CountingDriver(dialect.createDriver())),
      createQueryCompiler: () => dialect.createQueryCompiler(),
      createIntrospector: (db) => dialect.createIntrospector(db),
    },
    use: () => [{ pool: 'shared', max: 1, open: 1, idle: driver && driver.inUse > 0 ? 0 : 1, waiting: driver?.waiting ?? 0 }],
  };
}
