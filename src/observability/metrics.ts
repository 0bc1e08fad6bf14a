import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PoolUse } from '../db/pool-use.js';
import { processRegistry } from './process-metrics.js';

/**
 * The service's Prometheus metrics, one registry per app instance (tests build several
 * apps in one process; prom-client's global registry would refuse the second). Events
 * are counted as they happen through the small methods below; gauges of state owned
 * elsewhere (WebSocket connections, the database pool) are read at scrape time.
 * Names and labels: README, "Observability".
 */

export type Transport = 'http' | 'ws' | 'sse';
export type OperationKind = 'query' | 'mutation' | 'subscription' | 'none';
export type CacheOutcome = 'hit' | 'miss' | 'none';

export interface OperationObservation {
  transport: Transport;
  /** The route's pattern (`/graphql`, `/api/auth/login`, …), `none` when no route matched. */
  route: string;
  operationType: OperationKind;
  /** The HTTP status; over WebSocket (and for SSE refusals inside a stream) the one HTTP would have answered (200, or the refusal's own status). */
  status: number;
  seconds: number;
}

export interface WebSocketStats {
  connections: number;
  groups: number;
  subscribers: number;
  slowConsumersClosed: number;
}

/** From 100 µs (a cached answer) to 10 s. */
const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export class Metrics {
  readonly registry = new Registry();
  private readonly duration: Histogram<'transport' | 'route' | 'operation_type' | 'status'>;
  private readonly errors: Counter<'code'>;
  private readonly cache: Counter<'outcome'>;
  private readonly rateLimited: Counter<'transport' | 'route'>;
  private readonly costRefusals: Counter<'transport' | 'reason'>;

  constructor() {
    // The process's default metrics start sampling (the event-loop delay) with the first app.
    processRegistry();
    const registers = [this.registry];
    this.duration = new Histogram({
      name: 'inkwell_request_duration_seconds',
      help: 'Time to answer a request (HTTP) or an operation (WebSocket), by transport, route, GraphQL operation type and status',
      labelNames: ['transport', 'route', 'operation_type', 'status'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.errors = new Counter({ name: 'inkwell_graphql_errors_total', help: 'GraphQL errors sent to clients, by extensions.code', labelNames: ['code'], registers });
    this.cache = new Counter({
      name: 'inkwell_response_cache_requests_total',
      help: 'Cacheable queries looked up in the response cache, by outcome (hit or miss)',
      labelNames: ['outcome'],
      registers,
    });
    this.rateLimited = new Counter({
      name: 'inkwell_rate_limited_total',
      help: 'Requests and WebSocket operations refused for a client over its rate limit',
      labelNames: ['transport', 'route'],
      registers,
    });
    this.costRefusals = new Counter({
      name: 'inkwell_cost_refusals_total',
      help: "GraphQL operations refused for their cost: over the caller's bucket (bucket, 429) or more than a whole bucket (limit, 400)",
      labelNames: ['transport', 'reason'],
      registers,
    });
  }

  observeOperation(o: OperationObservation): void {
    this.duration.observe({ transport: o.transport, route: o.route, operation_type: o.operationType, status: o.status }, o.seconds);
    if (o.status === 429) this.rateLimited.inc({ transport: o.transport, route: o.route });
  }

  /** An operation refused for its cost (src/graphql/operation/core.ts); `transport` as the core names it. */
  costRefused(transport: string, reason: 'bucket' | 'limit'): void {
    this.costRefusals.inc({ transport: transport.startsWith('http') ? 'http' : transport.startsWith('sse') ? 'sse' : transport, reason });
  }

  /** One error as a client receives it; `code` is its `extensions.code`. */
  graphqlError = (code: string): void => {
    this.errors.inc({ code });
  };

  cacheOutcome(outcome: CacheOutcome): void {
    if (outcome !== 'none') this.cache.inc({ outcome });
  }

  /** WebSocket gauges, read from the WebSocket server at scrape time. */
  watchWebSocket(stats: () => WebSocketStats): void {
    const registers = [this.registry];
    new Gauge({ name: 'inkwell_websocket_connections', help: 'Open WebSocket connections', registers, collect() { this.set(stats().connections); } });
    new Gauge({ name: 'inkwell_websocket_subscriptions', help: 'Active subscriptions over WebSocket', registers, collect() { this.set(stats().subscribers); } });
    new Gauge({
      name: 'inkwell_websocket_subscription_groups',
      help: 'Distinct (operation, variables, caller) groups the active subscriptions share; each event executes once per group',
      registers,
      collect() {
        this.set(stats().groups);
      },
    });
    new Counter({
      name: 'inkwell_websocket_slow_consumers_closed_total',
      help: 'WebSockets closed because the client stopped reading',
      registers,
      collect() {
        this.reset();
        this.inc(stats().slowConsumersClosed);
      },
    });
  }

  /** GraphQL over SSE (src/graphql/sse/), read from its adapter at scrape time. */
  watchEventStreams(stats: () => { streams: number; subscriptions: number; slowConsumersClosed: number }): void {
    const registers = [this.registry];
    new Gauge({ name: 'inkwell_sse_streams', help: 'Open GraphQL event streams (SSE)', registers, collect() { this.set(stats().streams); } });
    new Gauge({ name: 'inkwell_sse_subscriptions', help: 'Active subscriptions over SSE', registers, collect() { this.set(stats().subscriptions); } });
    new Counter({
      name: 'inkwell_sse_slow_consumers_closed_total',
      help: 'Event streams cut because the client stopped reading',
      registers,
      collect() {
        this.reset();
        this.inc(stats().slowConsumersClosed);
      },
    });
  }

  /** Database pool gauges, read from the pool at scrape time. */
  watchPool(use: () => PoolUse[]): void {
    const registers = [this.registry];
    const labelNames = ['pool'];
    new Gauge({
      name: 'inkwell_db_pool_max',
      help: 'Connections a database pool may open, by pool (reads, writes; shared: SQLite\'s one)',
      labelNames,
      registers,
      collect() {
        for (const p of use()) this.set({ pool: p.pool }, p.max);
      },
    });
    new Gauge({
      name: 'inkwell_db_pool_connections',
      help: 'Open database connections, by pool and state (in_use or idle)',
      labelNames: ['pool', 'state'],
      registers,
      collect() {
        for (const { pool, open, idle } of use()) {
          this.set({ pool, state: 'in_use' }, open - idle);
          this.set({ pool, state: 'idle' }, idle);
        }
      },
    });
    new Gauge({
      name: 'inkwell_db_pool_waiting',
      help: 'Queries or transactions waiting for a database connection, by pool',
      labelNames,
      registers,
      collect() {
        for (const p of use()) this.set({ pool: p.pool }, p.waiting);
      },
    });
  }

  /** The heavy operations' line (src/graphql/operation/heavy.ts), read at scrape time. */
  watchHeavy(stats: () => { running: number; waiting: number; waited: number; executed: number; refused: Record<string, number> }): void {
    const registers = [this.registry];
    new Gauge({
      name: 'inkwell_graphql_heavy_operations',
      help: 'Heavy operations (cost at least QUERY_HEAVY_COST), by state (running or waiting for their turn)',
      labelNames: ['state'],
      registers,
      collect() {
        const { running, waiting } = stats();
        this.set({ state: 'running' }, running);
        this.set({ state: 'waiting' }, waiting);
      },
    });
    new Counter({
      name: 'inkwell_graphql_heavy_waits_total',
      help: 'Heavy operations that waited for their turn',
      registers,
      collect() {
        this.reset();
        this.inc(stats().waited);
      },
    });
    new Counter({
      name: 'inkwell_graphql_heavy_executions_total',
      help: 'Heavy operations that began to execute',
      registers,
      collect() {
        this.reset();
        this.inc(stats().executed);
      },
    });
    new Counter({
      name: 'inkwell_graphql_heavy_refusals_total',
      help: 'Heavy operations not executed, by reason: the line was full or the wait too long (503 OVERLOADED), or the client had gone',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, count] of Object.entries(stats().refused)) this.inc({ reason }, count);
      },
    });
  }

  /** The password hashing threads (src/auth/passwords.ts), read at scrape time. */
  watchPasswordHashing(stats: () => { hashed: number; compared: number; waiting: number }): void {
    const registers = [this.registry];
    new Counter({
      name: 'inkwell_password_operations_total',
      help: 'bcrypt operations begun, by operation: hash (registration, a password change, a re-hash) or compare (every sign-in attempt, an unknown email included)',
      labelNames: ['operation'],
      registers,
      collect() {
        this.reset();
        const { hashed, compared } = stats();
        this.inc({ operation: 'hash' }, hashed);
        this.inc({ operation: 'compare' }, compared);
      },
    });
    new Gauge({ name: 'inkwell_password_operations_waiting', help: 'bcrypt operations waiting for a hashing thread', registers, collect() { this.set(stats().waiting); } });
  }

  /** The Prometheus text exposition: the process's default metrics, then this app's. */
  async render(): Promise<string> {
    const [process, app] = await Promise.all([processRegistry().metrics(), this.registry.metrics()]);
    return `${process}\n${app}`;
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
