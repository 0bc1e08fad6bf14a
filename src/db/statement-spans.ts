import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult, TransactionSettings } from 'kysely';
import { tracingEnabled, withSpan } from '../observability/tracing.js';

/**
 * A span for every SQL statement on SQLite, which has no OpenTelemetry instrumentation
 * of its own (PostgreSQL's statements are traced by `@opentelemetry/instrumentation-pg`,
 * so wrapping them here too would double every span). Wraps the Kysely dialect as
 * write-tracking.ts does; installed only while tracing is on, so it costs nothing
 * otherwise. Attributes follow the stable database conventions the pg and ioredis
 * instrumentations emit: `db.query.text` is the SQL with its `?` placeholders, never values.
 */

const OPERATION = /^\s*([a-z]+)/i;

function statementSpan<T>(sql: string, run: () => Promise<T>): Promise<T> {
  return withSpan(operationOf(sql), run, {
    kind: 'client',
    attributes: () => ({ 'db.system.name': 'sqlite', 'db.query.text': sql, 'db.operation.name': operationOf(sql) }),
  });
}

function operationOf(sql: string): string {
  return OPERATION.exec(sql)?.[1]?.toUpperCase() ?? 'SQL';
}

class TracedConnection implements DatabaseConnection {
  constructor(readonly inner: DatabaseConnection) {}

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return statementSpan(query.sql, () => this.inner.executeQuery<R>(query));
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

class TracingDriver implements Driver {
  private readonly wrapped = new WeakMap<DatabaseConnection, TracedConnection>();

  constructor(private readonly inner: Driver) {}

  init(): Promise<void> {
    return this.inner.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.inner.acquireConnection();
    let traced = this.wrapped.get(connection);
    if (!traced) {
      traced = new TracedConnection(connection);
      this.wrapped.set(connection, traced);
    }
    return traced;
  }

  // The driver sends BEGIN / COMMIT / ROLLBACK on the inner connection itself: spans of their own here.
  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return statementSpan('BEGIN', () => this.inner.beginTransaction((connection as TracedConnection).inner, settings));
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return statementSpan('COMMIT', () => this.inner.commitTransaction((connection as TracedConnection).inner));
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return statementSpan('ROLLBACK', () => this.inner.rollbackTransaction((connection as TracedConnection).inner));
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.inner.releaseConnection((connection as TracedConnection).inner);
  }

  destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

/** The dialect with a span per statement while tracing is on; the same dialect otherwise. */
export function traceStatements(dialect: Dialect): Dialect {
  if (!tracingEnabled()) return dialect;
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => new TracingDriver(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}
