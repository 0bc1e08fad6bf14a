import type { ExecutionResult } from 'graphql';
import type { Caller } from '../../domain/caller.js';
import type { Services } from '../../domain/services.js';
import type { Body, CacheSlot, ResponseCache } from '../../cache/response-cache.js';
import { traceExecute } from '../../observability/tracing.js';
import { createContext } from '../context.js';
import { BadRequest, MethodNotAllowed } from './errors.js';
import type { HeavyLine } from './heavy.js';
import { assertNesting } from './nesting.js';
import type { PersistedQueries } from './persisted.js';
import type { OperationPipeline, PreparedOperation } from './pipeline.js';
import { nextSlice } from './slices.js';

/**
 * The one preparation every operation goes through, whichever transport carried it
 * (docs/graphql-endpoint.md): `check` (persisted-query resolution → parse, validate,
 * compile (cached) → the transport's rules), then `admit` (the response-cache lookup).
 * The request core charges the cost between the two, so that with Redis the charge and
 * the lookup share one round trip. A miss comes out as one `PreparedRequest`, which
 * `execute` runs; nothing is derived twice.
 */

/** The members of a GraphQL request, as either transport read them (types checked, values not). */
export interface OperationParams {
  readonly query: unknown;
  readonly variables: Record<string, unknown> | undefined;
  readonly operationName: string | undefined;
  readonly extensions: Record<string, unknown> | undefined;
}

/**
 * Where the request came from decides what it may run: a mutation needs POST (or a
 * socket), a subscription a socket or an event stream (`sse-*`: GraphQL over SSE).
 */
export type Transport = 'http-get' | 'http-post' | 'sse-get' | 'sse-post' | 'ws';

/** A request ready to execute: everything execution and the cache need, made once. */
export interface PreparedRequest {
  readonly operation: PreparedOperation;
  readonly variables: Record<string, unknown> | undefined;
  readonly caller: Caller;
  /** Where an error-free result is stored; undefined when it is not cached. */
  readonly cacheSlot: CacheSlot | undefined;
  /** The line a heavy operation waits in for its turn (./heavy.ts); undefined for the others. */
  readonly line: HeavyLine | undefined;
  /** Its complexity with these variables: the cost it asks of the caller's bucket (docs/limits.md, "Cost"). */
  readonly cost: number;
}

/** What the request asks, known before the response cache is asked: the operation and its cost with these variables. */
export interface CheckedRequest {
  readonly params: OperationParams;
  readonly operation: PreparedOperation;
  /** Its complexity with these variables: the cost it asks of the caller's bucket (docs/limits.md, "Cost"). */
  readonly cost: number;
  /** An automatic persisted query's text to register under its hash once admitted. */
  readonly registerAs: string | undefined;
  /** The document's text (a persisted query's, once resolved). */
  readonly query: string;
}

/**
 * A cached response (its JSON text, or bytes when large) with what its execution cost
 * (`cachedCost`, undefined for an entry stored without it); or the request to execute.
 */
export type Admission = { readonly cached: Body; readonly cachedCost: number | undefined } | { readonly prepared: PreparedRequest };

export class RequestPreparer {
  constructor(
    private readonly pipeline: OperationPipeline,
    private readonly persisted: PersistedQueries,
    private readonly cache: ResponseCache | undefined,
    private readonly heavy: HeavyLine,
  ) {}

  /**
   * Persisted-query resolution, parse, validate, limits, cost and the transport's rules.
   * Throws RequestError (a refusal with its status and code) for anything that must not execute.
   */
  async check(params: OperationParams, transport: Transport): Promise<CheckedRequest> {
    assertNesting(params.variables, 'variables');
    assertNesting(params.extensions, 'extensions');
    const resolved = await this.persisted.resolve(params.query, params.extensions);
    const { operation, cost } = this.pipeline.prepare(resolved.query, params.operationName, params.variables);
    checkTransport(operation, transport);
    return { params, operation, cost, registerAs: resolved.registerAs, query: resolved.query };
  }

  /** Checking these parameters is a lookup: their document was prepared before, and no persisted-query store must be asked. */
  knows(params: OperationParams): boolean {
    const query = this.persisted.asSent(params.query, params.extensions);
    return query !== undefined && this.pipeline.knows(query, params.operationName);
  }

  /**
   * The response-cache lookup: the cached answer, or the request to execute. Asked in the
   * event-loop turn it is called in (with Redis, in that turn's pipeline: src/store/redis-turn.ts).
   */
  async admit(checked: CheckedRequest, caller: Caller): Promise<Admission> {
    const { params, operation, cost } = checked;
    if (checked.registerAs) await this.persisted.register(checked.registerAs, checked.query);
    const found = this.cache && operation.operationType === 'query' ? await this.cache.lookup(operation, params.variables, caller) : undefined;
    if (found && 'body' in found) return { cached: found.body, cachedCost: found.cost };
    const line = this.heavy.isHeavy(cost) ? this.heavy : undefined;
    return { prepared: { operation, variables: params.variables, caller, cacheSlot: found, line, cost } };
  }
}

function checkTransport(operation: PreparedOperation, transport: Transport): void {
  if (transport === 'ws') return;
  if (operation.operationType === 'subscription' && transport !== 'sse-get' && transport !== 'sse-post') {
    throw new BadRequest('Subscriptions are served over WebSocket, or Server-Sent Events (Accept: text/event-stream), at this path');
  }
  if (operation.operationType === 'mutation' && (transport === 'http-get' || transport === 'sse-get')) {
    throw new MethodNotAllowed('Cannot perform mutations over GET', 'POST');
  }
}

/**
 * Runs a prepared query or mutation with a fresh context (caller, loaders). A cacheable
 * one runs with the caller, the slot's scope as its audience, and the slot's dependency recorder (src/cache/).
 *
 * It starts in a slice of the event loop's check phase (./slices.ts), so that under load
 * one loop iteration never runs every pending execution back to back; a heavy one
 * first waits for its turn (./heavy.ts), and leaves the line unexecuted once `signal`
 * says its client has gone.
 */
export function execute(prepared: PreparedRequest, services: Services, signal?: AbortSignal): Promise<ExecutionResult> {
  return prepared.line ? prepared.line.run(() => executeNow(prepared, services), signal) : executeNow(prepared, services);
}

async function executeNow(prepared: PreparedRequest, services: Services): Promise<ExecutionResult> {
  await nextSlice();
  const slot = prepared.cacheSlot;
  // Object.assign: see "Object spreads off the request path" in docs/decisions.md.
  const context = slot
    ? createContext(services, Object.assign({}, prepared.caller, { audience: slot.scope }), slot.recorder)
    : createContext(services, prepared.caller);
  const { operation, variables } = prepared;
  // observability: the `graphql.execute` span (a plain call while tracing is off).
  return traceExecute(operation, () => operation.executable.query(undefined, context, variables) as ExecutionResult | Promise<ExecutionResult>);
}
