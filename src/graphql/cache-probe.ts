import type { RequestParams } from 'graphql-http';
import type { Caller } from '../domain/caller.js';
import { RequestError } from './errors.js';
import type { PersistedQueries } from './persisted.js';
import type { OperationPipeline, PreparedOperation } from './pipeline.js';
import { readParams, type RawGraphQLRequest } from './request-params.js';
import type { CacheSlot, ResponseCache } from './response-cache.js';

/**
 * The hot path of a read-mostly API: is this request a query whose response is
 * cached? Only a clean hit counts; anything unusual (a malformed request, an error,
 * a persisted-query registration, a mutation) answers `undefined` and takes the full
 * path, which checks everything again and answers it properly. Used by the front
 * door (before Fastify) and by the Fastify route (before graphql-http).
 */

/** A miss that was read, resolved and prepared already, with the slot to fill. */
export interface ProbedMiss {
  params: RequestParams;
  prepared: PreparedOperation;
  slot: CacheSlot | undefined;
}

/**
 * A hit carries its cache key, so the front door can find the entry again without
 * parsing; `repeatable` says the same request text always maps to that key (no
 * persisted-query store was consulted on the way).
 */
export interface ProbedHit {
  hit: Buffer;
  /** The operation answered (observability: its name and type in the request's log line). */
  prepared: PreparedOperation;
  key: string;
  repeatable: boolean;
}

export type ProbeResult = ProbedHit | { miss: ProbedMiss } | undefined;

export class CacheProbe {
  constructor(
    private readonly pipeline: OperationPipeline,
    private readonly persisted: PersistedQueries,
    private readonly cache: ResponseCache,
  ) {}

  async probe(req: RawGraphQLRequest, caller: Caller): Promise<ProbeResult> {
    let params: RequestParams;
    let prepared: PreparedOperation;
    let repeatable: boolean;
    try {
      const raw = readParams(req);
      const resolved = await this.persisted.resolve(raw.query, raw.extensions);
      if (resolved.registerAs) return undefined;
      repeatable = !resolved.fromStore;
      params = { ...raw, query: resolved.query };
      prepared = this.pipeline.prepare(params.query, params.operationName, params.variables);
    } catch (error) {
      if (error instanceof RequestError) return undefined;
      throw error;
    }
    if (prepared.operationType !== 'query') return undefined;
    const cached = await this.cache.lookup(prepared, params.variables, caller);
    if (cached && 'body' in cached) return { hit: cached.body, prepared, key: cached.key, repeatable }; // observability: + prepared
    return { miss: { params, prepared, slot: cached } };
  }
}
