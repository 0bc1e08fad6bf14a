import {
  AliasNode,
  TableNode,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type KyselyPlugin,
  type OperationNode,
  type QueryResult,
  type RootOperationNode,
  type TransactionSettings,
} from 'kysely';

/**
 * Wraps a Kysely dialect so that no committed write to cached data goes unnoticed
 * (docs/decisions.md): src/domain writes through a handle marked by `announcedWrites`
 * and bumps what it changed itself; any other write to a cached table is reported once
 * committed (awaited) and invalidates everything — it can cost hits, never freshness.
 */
export type UnannouncedWriteListener = () => void | Promise<void>;

export interface WriteTracking {
  readonly dialect: Dialect;
  /** True while a transaction is open on one of this dialect's connections. */
  inTransaction(): boolean;
}

// A CTE is read-only unless it names a writing statement (Kysely's PostgreSQL migration lock is one).
const READ_ONLY = /^\s*(select|pragma|explain)\b|^\s*with\b(?![\s\S]*\b(insert|update|delete|merge)\b)/i;
const ANNOUNCED = Symbol('inkwell.announced');

/** Marks the writes of the handle it is added to (`kysely.withPlugin`) as announced by their caller. */
export const announcedWrites: KyselyPlugin = {
  // Object.assign: see "Object spreads off the request path" in docs/decisions.md.
  transformQuery: ({ node }) => (isWriteKind(node.kind) ? (Object.freeze(Object.assign({}, node, { [ANNOUNCED]: true })) as RootOperationNode) : node),
  transformResult: async ({ result }) => result,
};

function isWriteKind(kind: OperationNode['kind']): boolean {
  return kind === 'InsertQueryNode' || kind === 'UpdateQueryNode' || kind === 'DeleteQueryNode' || kind === 'MergeQueryNode';
}

function isWrite(query: CompiledQuery): boolean {
  return query.query.kind !== 'SelectQueryNode' && !READ_ONLY.test(query.sql);
}

/** The table a write changes, when the statement says so plainly; undefined for anything else (raw SQL, DDL). */
function targetTable(node: RootOperationNode): string | undefined {
  const named = (target: OperationNode | undefined): string | undefined => {
    if (!target) return undefined;
    if (TableNode.is(target)) return target.table.identifier.name;
    if (AliasNode.is(target)) return named(target.node);
    return undefined;
  };
  switch (node.kind) {
    case 'InsertQueryNode':
      return named(node.into);
    case 'UpdateQueryNode':
      return named(node.table);
    case 'DeleteQueryNode':
      return node.from.froms.length === 1 ? named(node.from.froms[0]) : undefined;
    default:
      return undefined;
  }
}

class TrackedConnection implements DatabaseConnection {
  inTransaction = false;
  /** An unannounced write to a cached table, not yet committed. */
  pending = false;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly tracker: Tracker,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const result = await this.inner.executeQuery<R>(query);
    if (isWrite(query) && this.tracker.concerns(query.query)) {
      if (this.inTransaction) this.pending = true;
      else await this.tracker.onUnannouncedWrite();
    }
    return result;
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

interface Tracker {
  concerns(node: RootOperationNode): boolean;
  onUnannouncedWrite: UnannouncedWriteListener;
}

class TrackingDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, TrackedConnection>();
  open = 0;

  constructor(
    private readonly inner: Driver,
    private readonly tracker: Tracker,
  ) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let tracked = this.wrapped.get(connection);
    if (!tracked) {
      tracked = new TrackedConnection(connection, this.tracker);
      this.wrapped.set(connection, tracked);
    }
    return tracked;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const tracked = connection as TrackedConnection;
    tracked.inTransaction = true;
    tracked.pending = false;
    this.open++;
    try {
      await this.inner.beginTransaction(tracked.inner, settings);
    } catch (error) {
      this.end(tracked);
      throw error;
    }
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection;
    try {
      await this.inner.commitTransaction(tracked.inner);
    } finally {
      // A failed COMMIT may still have committed (a broken connection): report it anyway.
      const pending = tracked.pending;
      this.end(tracked);
      if (pending) await this.tracker.onUnannouncedWrite();
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const tracked = connection as TrackedConnection;
    try {
      await this.inner.rollbackTransaction(tracked.inner);
    } finally {
      this.end(tracked);
    }
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as TrackedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }

  private end(tracked: TrackedConnection): void {
    if (!tracked.inTransaction) return;
    tracked.inTransaction = false;
    tracked.pending = false;
    this.open--;
  }
}

/**
 * `cachedTables`: the tables cached results are read from. A write elsewhere (sessions,
 * tokens) is never reported; an unannounced write whose target cannot be told is.
 */
export function trackWrites(dialect: Dialect, cachedTables: ReadonlySet<string>, onUnannouncedWrite: UnannouncedWriteListener): WriteTracking {
  const tracker: Tracker = {
    concerns(node) {
      if ((node as { [ANNOUNCED]?: boolean })[ANNOUNCED]) return false;
      const table = targetTable(node);
      return table === undefined || cachedTables.has(table);
    },
    onUnannouncedWrite,
  };
  const drivers: TrackingDriver[] = [];
  return {
    dialect: {
      createAdapter: () => dialect.createAdapter(),
      createDriver: () => {
        const driver = new TrackingDriver(dialect.createDriver(), tracker);
        drivers.push(driver);
        return driver;
      },
      createQueryCompiler: () => dialect.createQueryCompiler(),
      createIntrospector: (db) => dialect.createIntrospector(db),
    },
    inTransaction: () => drivers.some((driver) => driver.open > 0),
  };
}
