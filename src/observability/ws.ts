import type { FastifyBaseLogger } from 'fastify';
import { infoEnabled } from './log-level.js';
import type { Metrics, OperationKind } from './metrics.js';
import { operationNameOf, type ObservedOperation } from './operation.js';

/**
 * GraphQL operations over WebSocket, observed like HTTP requests: a duration in the
 * same histogram (transport `ws`) and one log line each — from the subscribe message
 * to the result of a query or mutation, or to a subscription being set up; or to its
 * refusal. The WebSocket adapter calls `started`, `executed` and `refused` with
 * graphql-ws's subscribe payload, the one object all its hooks share for an operation.
 */

interface Started {
  at: number;
}

export class WsObserver {
  private readonly started = new WeakMap<object, Started>();

  constructor(
    private readonly metrics: Metrics,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** For the error formatter's `onCode`: errors sent over WebSocket, by code. */
  readonly graphqlError = (code: string): void => this.metrics.graphqlError(code);

  /** A subscribe message arrived (graphql-ws `onSubscribe`). */
  start(payload: object): void {
    this.started.set(payload, { at: performance.now() });
  }

  /** Executed (a query or mutation) or subscribed (graphql-ws `onOperation`). */
  executed(
    payload: object,
    operation: ObservedOperation,
    caller: { kind: string; id?: string } | undefined,
  ): void {
    this.finish(payload, 200, operation.operationType as OperationKind, operationNameOf(operation), caller);
  }

  /** Refused before execution, with the status HTTP would have answered (the refusal's own). */
  refused(payload: object, status: number): void {
    this.finish(payload, status, 'none', undefined, undefined);
  }

  private finish(
    payload: object,
    status: number,
    operationType: OperationKind,
    operationName: string | undefined,
    caller: { kind: string; id?: string } | undefined,
  ): void {
    const started = this.started.get(payload);
    // Only once per operation: a subscription's later errors are not its set-up.
    if (started === undefined) return;
    this.started.delete(payload);
    const durationMs = performance.now() - started.at;
    this.metrics.observeOperation({ transport: 'ws', route: '/graphql', operationType, status, seconds: durationMs / 1000 });
    if (!infoEnabled(this.log)) return;
    const line: Record<string, unknown> = { transport: 'ws', status, durationMs: Math.round(durationMs * 1000) / 1000, cache: 'none', operationType };
    if (caller) line['caller'] = caller.kind === 'user' && caller.id !== undefined ? caller.id : 'anonymous';
    if (operationName !== undefined) line['operation'] = operationName;
    this.log.info(line, 'operation completed');
  }
}
