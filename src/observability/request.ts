import type { FastifyRequest } from 'fastify';
import type { CacheOutcome, OperationKind, Transport } from './metrics.js';
import { operationNameOf, type ObservedOperation } from './operation.js';

/**
 * What the GraphQL route learns about a request on its way through — the caller, the
 * operation, the response-cache outcome — for the request's metrics and its log line,
 * both written once when the response is finished (request-log.ts). The route's call
 * sites are one line each: `observe(request).caller(caller)`, and so on.
 */

export class RequestObservation {
  callerId: string | undefined = undefined;
  operationName: string | undefined = undefined;
  operationType: OperationKind = 'none';
  cacheOutcome: CacheOutcome = 'none';
  transport: Extract<Transport, 'http' | 'sse'> = 'http';
  /**
   * Its duration is already in the metrics: an event stream's, observed when its answer
   * began (src/graphql/sse/), not when the stream ends.
   */
  observed = false;

  /** The user's id, or `anonymous`; never a credential. */
  caller(caller: { kind: string; id?: string }): this {
    this.callerId = caller.kind === 'user' && caller.id !== undefined ? caller.id : 'anonymous';
    return this;
  }

  operation(prepared: ObservedOperation): this {
    this.operationName = operationNameOf(prepared);
    this.operationType = prepared.operationType as OperationKind;
    return this;
  }

  /** Asked for GraphQL over SSE. */
  eventStream(): this {
    this.transport = 'sse';
    return this;
  }

  cache(outcome: CacheOutcome): this {
    this.cacheOutcome = outcome;
    return this;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Filled by the routes as they learn things; null until the first `observe(request)`. */
    observation: RequestObservation | null;
  }
}

/** This request's observation, made on first use. */
export function observe(request: FastifyRequest): RequestObservation {
  return (request.observation ??= new RequestObservation());
}

/**
 * The outcome of a response-cache lookup: a cached body is a hit, a slot to fill a miss,
 * nothing (not a query, or caching impossible now) neither.
 */
export function cacheOutcomeOf(lookup: object | undefined): CacheOutcome {
  if (lookup === undefined) return 'none';
  return 'body' in lookup || 'hit' in lookup ? 'hit' : 'miss';
}
