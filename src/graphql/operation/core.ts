import { getOperationAST, getVariableValues, type ExecutionResult, type GraphQLError, type GraphQLSchema } from 'graphql';
import type { Caller } from '../../domain/caller.js';
import type { Services } from '../../domain/services.js';
import { clientKey, limitHeaders, limiterKey } from '../../rate-limit/limiter.js';
import type { RequestLimit } from '../../rate-limit/request-limit.js';
import type { ResponseCache } from '../cache/response-cache.js';
import { InvalidVariables, RateLimited, RequestError, Unauthenticated, formatError, type FormatOptions } from './errors.js';
import type { PreparedOperation } from './pipeline.js';
import { execute, type OperationParams, type PreparedRequest, type RequestPreparer, type Transport } from './request.js';

/**
 * The request core (docs/graphql-endpoint.md, "One way through"): one function owns a
 * GraphQL request from its parameters and caller to its answer — the rate limit, the
 * preparation (./request.ts: persisted query, parse, validate, limits, compile, transport
 * rules, response-cache lookup), the heavy line, execution, the response-cache store,
 * variable errors, and each refusal's status. The transports (../http/route.ts,
 * ../ws/server.ts) are adapters: they read a request, call `serve`, and write the answer.
 *
 * Counting: every query and mutation counts against the client's request limit;
 * subscriptions do not (connection caps bound them, docs/limits.md). Only a socket can
 * carry a subscription, so there an operation is prepared before it is counted (refused
 * ones count too); over HTTP a request is counted first, before any work.
 */

export interface GraphQLRequest {
  /** The parameters as the transport read them; throws a RequestError for malformed input. */
  readParams(): OperationParams;
  readonly caller: Caller;
  /** A credential was presented but refused: answered 401 (after counting). */
  readonly credentialRefused?: boolean;
  /** The client's address (a signed-in caller counts by user, else by address). */
  readonly ip: string;
  readonly transport: Transport;
  /** Aborts once the client has gone: a heavy operation then leaves its line unexecuted. */
  signal?(): AbortSignal;
  /** How errors become what clients see (masking, logs, metrics). */
  readonly format: FormatOptions;
}

/** What a refusal or result carries back to its transport. */
interface Answered {
  /** The prepared operation, once known (for logs and metrics). */
  readonly operation: PreparedOperation | undefined;
  /** Headers the answer needs: `x-ratelimit-*`, `retry-after`, `allow`. */
  readonly headers: Record<string, string | number>;
}

export type Answer =
  /** Refused before execution: no `data`, the status of its first error. */
  | (Answered & { readonly kind: 'refused'; readonly status: number; readonly errors: readonly GraphQLError[] })
  /** Executed (or answered from the response cache): the response body as JSON text. */
  | (Answered & { readonly kind: 'result'; readonly body: string; readonly cache: 'hit' | 'miss' | 'none' })
  /** A subscription to start (sockets only), its variables checked; `variablesKey` is their coerced JSON. */
  | (Answered & {
      readonly kind: 'subscription';
      readonly prepared: PreparedRequest;
      readonly variables: Record<string, unknown> | undefined;
      readonly variablesKey: string;
    });

export interface CoreOptions {
  schema: GraphQLSchema;
  preparer: RequestPreparer;
  services: Services;
  responseCache: ResponseCache | undefined;
  limit: RequestLimit;
}

export class RequestCore {
  constructor(private readonly options: CoreOptions) {}

  async serve(request: GraphQLRequest): Promise<Answer> {
    const key = limiterKey('graphql', clientKey(request.caller, request.ip));
    let headers: Answered['headers'] = {};
    let operation: PreparedOperation | undefined;
    try {
      if (request.transport !== 'ws') headers = await this.count(key);
      if (request.credentialRefused) throw new Unauthenticated();
      const params = request.readParams();
      let admission;
      try {
        admission = await this.options.preparer.prepare(params, request.caller, request.transport);
      } catch (error) {
        if (request.transport === 'ws') headers = await this.count(key);
        throw error;
      }
      operation = 'cached' in admission ? admission.operation : admission.prepared.operation;
      if (request.transport === 'ws' && operation.operationType !== 'subscription') headers = await this.count(key);
      if ('cached' in admission) return { kind: 'result', body: admission.cached, cache: 'hit', operation, headers };
      const { prepared } = admission;
      if (operation.operationType === 'subscription') {
        const variablesKey = this.checkVariables(operation, params.variables);
        return { kind: 'subscription', prepared, variables: params.variables, variablesKey, operation, headers };
      }
      const result = await execute(prepared, this.options.services, prepared.line && request.signal?.());
      return this.answer(prepared, result, request.format, headers);
    } catch (error) {
      if (!(error instanceof RequestError)) throw error;
      return { kind: 'refused', status: error.status, errors: error.errors, operation, headers: { ...headers, ...error.headers } };
    }
  }

  /** Counts one request; throws RateLimited (429, with `retry-after`) once over the limit. */
  private async count(key: string): Promise<Record<string, number>> {
    const decision = await this.options.limit.decide(key);
    const headers = limitHeaders(decision);
    if (!decision.allowed) throw new RateLimited(headers);
    return headers;
  }

  /**
   * A subscription's variables are checked before it starts (a query's are, by its
   * compiled execution, below): the coerced values, as JSON, key its fan-out group.
   */
  private checkVariables(operation: PreparedOperation, variables: Record<string, unknown> | undefined): string {
    const definitions = getOperationAST(operation.document, operation.operationName)?.variableDefinitions ?? [];
    const coerced = getVariableValues(this.options.schema, definitions, variables ?? {});
    if (coerced.errors) throw new InvalidVariables(coerced.errors);
    return JSON.stringify(coerced.coerced);
  }

  private answer(prepared: PreparedRequest, result: ExecutionResult, format: FormatOptions, headers: Answered['headers']): Answer {
    const { operation } = prepared;
    if (result.data === undefined || (result.data === null && !result.errors?.some((e) => e.path))) {
      // No data and no field path: the variables did not match their types. A request error.
      const refusal = new InvalidVariables(result.errors ?? []);
      return { kind: 'refused', status: refusal.status, errors: refusal.errors, operation, headers };
    }
    const cache = prepared.cacheSlot ? 'miss' : 'none';
    if (result.errors) {
      const body = JSON.stringify({ data: result.data, errors: result.errors.map((e) => formatError(e, format)) });
      return { kind: 'result', body, cache, operation, headers };
    }
    const body = operation.compiled.stringify(result);
    // Only error-free results are kept: an error may be transient.
    if (prepared.cacheSlot) this.options.responseCache?.store(prepared.cacheSlot, body);
    return { kind: 'result', body, cache, operation, headers };
  }
}
