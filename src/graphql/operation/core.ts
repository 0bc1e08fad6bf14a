import { getOperationAST, getVariableValues, type ExecutionResult, type GraphQLError, type GraphQLSchema } from 'graphql';
import type { Caller } from '../../domain/caller.js';
import type { Services } from '../../domain/services.js';
import { clientKey, limitHeaders, limiterKey } from '../../rate-limit/limiter.js';
import type { BucketAnswer, CostBucket } from '../../rate-limit/cost-bucket.js';
import type { RequestLimit } from '../../rate-limit/request-limit.js';
import type { Body, CacheSlot, ResponseCache } from '../../cache/response-cache.js';
import { actualCost } from './actual-cost.js';
import { bodyOf, costHeaders, withCost, type CostReport } from './cost-report.js';
import { CostOverLimit, InvalidVariables, RateLimited, RequestError, Unauthenticated, formatError, type FormatOptions } from './errors.js';
import type { PreparedOperation } from './pipeline.js';
import { execute, type Admission, type CheckedRequest, type OperationParams, type PreparedRequest, type RequestPreparer, type Transport } from './request.js';
import { nextSlice } from './slices.js';

export type { CostReport } from './cost-report.js';

/**
 * The request core (docs/graphql-endpoint.md, "One way through"): one function owns a
 * GraphQL request from its parameters and caller to its answer — the rate limit, the
 * preparation (./request.ts: persisted query, parse, validate, limits, compile, transport
 * rules, response-cache lookup), the heavy line, execution, the response-cache store,
 * variable errors, and each refusal's status. The transports (../http/route.ts,
 * ../ws/server.ts) are adapters: they read a request, call `serve`, and write the answer.
 *
 * Counting: every query and mutation counts against the client's request limit, refused
 * ones too; a socket's subscriptions do not (connection caps bound them, docs/limits.md).
 * Over HTTP a request is counted first, before any work, unless it is small and its
 * operation was prepared before: then, as always on a socket, it is counted once checked,
 * in the turn it is charged and looked up (with Redis, one pipeline for the three), and a
 * refused count gives the charge back.
 *
 * Cost (docs/limits.md, "Cost"): once prepared, an operation's complexity is taken from
 * the caller's bucket, in the turn the response cache is asked; it runs only if the
 * bucket held it, and what it did not use is given back (a cached answer keeps what its
 * execution cost; a subscription keeps its complexity). Every answer that reached the
 * bucket says so in `cost` (inside a result's body already) and in its headers.
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
  /** Characters of its parameters as sent (a body, or the URL of a GET); unset when already read (a socket's message). */
  readonly size?: number;
  /** Aborts once the client has gone: a heavy operation then leaves its line unexecuted. */
  signal?(): AbortSignal;
  /** How errors become what clients see (masking, logs, metrics). */
  readonly format: FormatOptions;
}

/** The largest request read before it is counted: reading it costs less than counting it twice. */
const SMALL_REQUEST = 8_192;

/** A request's charge under way: its cost taken, and the response-cache lookup beside it. */
interface Charging {
  readonly taking: Promise<BucketAnswer>;
  readonly admission: Promise<Admission>;
}

/** What a refusal or result carries back to its transport. */
interface Answered {
  /** The prepared operation, once known (for logs and metrics). */
  readonly operation: PreparedOperation | undefined;
  /** Headers the answer needs: `x-ratelimit-*`, `x-cost-*`, `retry-after`, `allow`. */
  readonly headers: Record<string, string | number>;
  /**
   * `extensions.cost` once the bucket was asked: already inside a result's body; a
   * transport adds it to a refusal, and to each event of a subscription (what it was charged).
   */
  readonly cost: CostReport | undefined;
}

export type Answer =
  /** Refused before execution: no `data`, the status of its first error. */
  | (Answered & { readonly kind: 'refused'; readonly status: number; readonly errors: readonly GraphQLError[] })
  /** Executed (or answered from the response cache): the response body, JSON text or (large) its bytes. */
  | (Answered & { readonly kind: 'result'; readonly body: Body; readonly cache: 'hit' | 'miss' | 'none' })
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
  /** Each caller's bucket of query cost (src/rate-limit/cost-bucket.ts). */
  cost: CostBucket;
  /** observability: an operation refused for its cost (`bucket`: 429; `limit`: more than a whole bucket, 400). */
  onCostRefused?(transport: Transport, reason: 'bucket' | 'limit'): void;
}

export class RequestCore {
  constructor(private readonly options: CoreOptions) {}

  async serve(request: GraphQLRequest): Promise<Answer> {
    const client = clientKey(request.caller, request.ip);
    const key = limiterKey('graphql', client);
    let headers: Answered['headers'] = {};
    let operation: PreparedOperation | undefined;
    let cost: CostReport | undefined;
    // A miss that ends without storing lets whoever joined it execute (src/cache/response-cache.ts).
    let slot: CacheSlot | undefined;
    try {
      const early = this.readEarly(request);
      // Over HTTP counted first, before any work, unless checking it is a lookup (below).
      const countFirst = request.transport !== 'ws' && !early?.known;
      if (countFirst) headers = await this.count(key);
      if (request.credentialRefused) throw new Unauthenticated();
      const params = early?.params ?? request.readParams();
      let checked;
      try {
        checked = await this.options.preparer.check(params, request.transport);
      } catch (error) {
        if (!countFirst) headers = await this.count(key);
        throw error;
      }
      operation = checked.operation;
      // Otherwise counted in the turn it is charged and looked up (with Redis, one pipeline);
      // a socket's subscription is not counted (connection caps bound those).
      const counting = countFirst || (request.transport === 'ws' && operation.operationType === 'subscription') ? undefined : this.count(key);
      const requested = checked.cost;
      let variablesKey = '';
      let charging: Charging | undefined;
      let failure: unknown;
      try {
        // A subscription's variables are checked before it is charged (a query's by its execution).
        if (operation.operationType === 'subscription') variablesKey = this.checkVariables(operation, params.variables);
        charging = this.charge(client, checked, request.caller);
      } catch (error) {
        failure = error;
      }
      if (counting) {
        // Over the request limit answers 429 first, whatever else the request did wrong, as a
        // request counted first would: nothing charged, no operation, nothing from the cache.
        headers = await counting.catch((error: unknown) => {
          if (charging) this.uncharge(client, requested, charging);
          operation = undefined;
          throw error;
        });
      }
      if (!charging) throw failure;
      const admission = await charging.admission;
      if ('prepared' in admission) slot = admission.prepared.cacheSlot;
      const taken = await charging.taking;
      if (!taken.allowed) {
        ({ cost, headers } = this.charged(headers, requested, null, taken));
        throw this.refusal(requested, taken, request.transport);
      }
      /** What it finally cost: the rest goes back, and the report says what the bucket then holds. */
      const settle = (actual: number) => {
        ({ cost, headers } = this.charged(headers, requested, actual, this.refund(client, requested - actual, taken)));
      };
      if ('cached' in admission) {
        this.options.responseCache?.served();
        // A cached answer costs what its execution cost (an entry stored without it: counted from its data).
        settle(Math.min(requested, admission.cachedCost ?? actualCost(operation, JSON.parse(admission.cached.toString()).data)));
        // Answered in a slice of the check phase, as executions start (./slices.ts): the hits
        // of a turn then write their sockets together, after the poll phase read every request
        // (docs/decisions.md, "Hits are answered in a slice too").
        await nextSlice();
        return { kind: 'result', body: withCost(admission.cached, cost!), cache: 'hit', operation, headers, cost };
      }
      const { prepared } = admission;
      if (operation.operationType === 'subscription') {
        settle(requested);
        return { kind: 'subscription', prepared, variables: params.variables, variablesKey, operation, headers, cost };
      }
      let result: ExecutionResult;
      try {
        result = await execute(prepared, this.options.services, prepared.line && request.signal?.());
      } catch (error) {
        // Not executed (its turn never came, its client went): the whole cost goes back.
        settle(0);
        throw error;
      }
      const actual = Math.min(requested, actualCost(operation, result.data));
      settle(actual);
      return this.answer(prepared, result, request.format, headers, cost!, actual);
    } catch (error) {
      if (!(error instanceof RequestError)) throw error;
      return { kind: 'refused', status: error.status, errors: error.errors, operation, headers: { ...headers, ...error.headers }, cost };
    } finally {
      if (slot) this.options.responseCache?.release(slot);
    }
  }

  /**
   * A small request is read before it is counted, to learn whether checking it is only a
   * lookup (`known`: its operation was prepared before, RequestPreparer.knows); then it is
   * counted beside its charge. Anything else is counted before it is read.
   */
  private readEarly(request: GraphQLRequest): { params: OperationParams; known: boolean } | undefined {
    if (request.credentialRefused || (request.size ?? 0) > SMALL_REQUEST) return undefined;
    let params;
    try {
      params = request.readParams();
    } catch {
      return undefined; // read again, and refused, once counted
    }
    return { params, known: this.options.preparer.knows(params) };
  }

  /**
   * Takes the whole requested cost in the turn the response cache is asked: with Redis
   * the charge and the lookup share one pipeline (src/store/redis-turn.ts). A lookup that
   * fails gives the cost back.
   */
  private charge(client: string, checked: CheckedRequest, caller: Caller): Charging {
    const taking = this.options.cost.take(client, checked.cost);
    const admission = this.options.preparer.admit(checked, caller).catch(async (error: unknown) => {
      this.refund(client, checked.cost, await taking);
      throw error;
    });
    // Awaited once the count (if any) has answered: never an unhandled rejection meanwhile.
    admission.catch(() => {});
    return { taking, admission };
  }

  /** Gives back a charge whose request was refused by its count (a failed lookup gave it back already). */
  private uncharge(client: string, requested: number, charging: Charging): void {
    void charging.admission.then(async (admission) => {
      if ('prepared' in admission && admission.prepared.cacheSlot) this.options.responseCache?.release(admission.prepared.cacheSlot);
      this.refund(client, requested, await charging.taking);
    }, () => {});
  }

  /** The report and headers once the bucket answered (`actual` null: refused for its cost). */
  private charged(
    headers: Answered['headers'],
    requested: number,
    actual: number | null,
    bucket: BucketAnswer,
  ): { cost: CostReport; headers: Answered['headers'] } {
    const { limit, restorePerSecond } = this.options.cost;
    const cost: CostReport = {
      requestedQueryCost: requested,
      actualQueryCost: actual,
      throttleStatus: { maximumAvailable: limit, currentlyAvailable: bucket.available, restoreRate: restorePerSecond },
    };
    // Object.assign, not a spread followed by members: Node 20's V8 spends ~1 µs on those
    // (docs/decisions.md, "Object spreads off the request path").
    return { cost, headers: Object.assign({}, headers, costHeaders(cost)) };
  }

  /**
   * Gives back what an operation did not use, where it was taken, without waiting for it:
   * the bucket as it is once given (later calls of the caller follow it in Redis's order,
   * docs/limits.md, "Cost"). A refund that fails falls back to this instance (CostBucket).
   */
  private refund(client: string, points: number, taken: BucketAnswer): BucketAnswer {
    if (points <= 0 || !taken.allowed) return taken;
    void this.options.cost.give(client, points, taken.shared);
    return Object.assign({}, taken, { available: Math.min(this.options.cost.limit, taken.available + points) });
  }

  /**
   * Over the bucket: 429 with `Retry-After`, the seconds until it holds the cost. An
   * operation that asks more than a whole bucket could never run: 400, no retry.
   */
  private refusal(requested: number, taken: BucketAnswer, transport: Transport): RequestError {
    const overLimit = requested > this.options.cost.limit;
    this.options.onCostRefused?.(transport, overLimit ? 'limit' : 'bucket'); // observability:
    return overLimit ? new CostOverLimit() : new RateLimited({ 'retry-after': taken.retryAfterSeconds });
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

  private answer(
    prepared: PreparedRequest,
    result: ExecutionResult,
    format: FormatOptions,
    headers: Answered['headers'],
    cost: CostReport,
    actual: number,
  ): Answer {
    const { operation } = prepared;
    if (result.data === undefined || (result.data === null && !result.errors?.some((e) => e.path))) {
      // No data and no field path: the variables did not match their types. A request error.
      const refusal = new InvalidVariables(result.errors ?? []);
      return { kind: 'refused', status: refusal.status, errors: refusal.errors, operation, headers, cost };
    }
    const cache = prepared.cacheSlot ? 'miss' : 'none';
    if (result.errors) {
      const body = bodyOf(JSON.stringify({ data: result.data, errors: result.errors.map((e) => formatError(e, format)) }));
      return { kind: 'result', body: withCost(body, cost), cache, operation, headers, cost };
    }
    const body = bodyOf(JSON.stringify(result));
    // Only error-free results are kept: an error may be transient. A hit will cost what this execution did.
    if (prepared.cacheSlot) this.options.responseCache?.store(prepared.cacheSlot, body, actual);
    return { kind: 'result', body: withCost(body, cost), cache, operation, headers, cost };
  }
}
