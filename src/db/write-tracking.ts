import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';

/**
 * Wraps a Kysely dialect so that every committed write is reported, wherever in the
 * code it happens: a statement outside a transaction once it has run, a transaction
 * once it has committed. Result caches use it to know, exactly, that the data changed
 * (SPEC: "never stale after a write") without every service having to remember to say so.
 * The callback is awaited, so a write is acknowledged only after it has been reported.
 */
export type CommittedWriteListener = () => void | Promise<void>;

const READ_ONLY = /^\s*(select|pragma|explain)\b/i;

function isWrite(query: CompiledQuery): boolean {
  return query.query.kind !== 'SelectQueryNode' && !READ_ONLY.test(query.sql);
}

class TrackedConnection implements DatabaseConnection {
  inTransaction = false;
  dirty = false;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly onCommittedWrite: CommittedWriteListener,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.inner.executeQuery<R>(query);
    if (isWrite(query)) {
      if (this.inTransaction) this.dirty = true;
      else await this.onCommittedWrite();
    }
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

class TrackingDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, TrackedConnection>();

  constructor(
    private readonly inner: Driver,
    private readonly onCommittedWrite: CommittedWriteListener,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let tracked = this.wrapped.get(connection);
    if (!tracked) {
      tracked = new TrackedConnection(connection, this.onCommittedWrite);
      this.wrapped.set(connection, tracked);
    }
    return tracked;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const tracked = connection as TrackedConnection;
    await this.inner.beginTransaction(tracked.inner, settings);
    tracked.inTransaction = true;
    tracked.dirty = false;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection;
    await this.inner.commitTransaction(tracked.inner);
    const dirty = tracked.dirty;
    tracked.inTransaction = false;
    tracked.dirty = false;
    if (dirty) await this.onCommittedWrite();
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection;
    tracked.inTransaction = false;
    tracked.dirty = false;
    await this.inner.rollbackTransaction(tracked.inner);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as TrackedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

export function trackWrites(dialect: Dialect, onCommittedWrite: CommittedWriteListener): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new TrackingDriver(dialect.createDriver(), onCommittedWrite),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
