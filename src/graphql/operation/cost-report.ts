import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Body } from '../../cache/response-cache.js';

/**
 * What every response says of its cost (docs/limits.md, "Cost"): `extensions.cost` in
 * the GraphQL body, and on HTTP the `X-Cost-Limit` / `X-Cost-Remaining` headers. The
 * request core (./core.ts) fills it in; the transports write it as they are given it.
 */

export interface CostReport {
  /** The operation's complexity: what it needed in the bucket to run. */
  readonly requestedQueryCost: number;
  /** The objects it returned (what it finally cost); null when it did not run for its cost. */
  readonly actualQueryCost: number | null;
  readonly throttleStatus: {
    /** `COST_LIMIT`: a full bucket. */
    readonly maximumAvailable: number;
    /** Whole points in the caller's bucket once this operation was charged (and refunded). */
    readonly currentlyAvailable: number;
    /** `COST_RESTORE_PER_S`: points regained each second. */
    readonly restoreRate: number;
  };
}

/** The report as the JSON value of `extensions.cost` (numbers only: no serialiser needed). */
export function costJson(report: CostReport): string {
  const { maximumAvailable, currentlyAvailable, restoreRate } = report.throttleStatus;
  return (
    `{"requestedQueryCost":${report.requestedQueryCost},"actualQueryCost":${report.actualQueryCost},` +
    `"throttleStatus":{"maximumAvailable":${maximumAvailable},"currentlyAvailable":${currentlyAvailable},"restoreRate":${restoreRate}}}`
  );
}

/**
 * Bodies from this many characters on are kept and sent as their UTF-8 bytes. A string of
 * more than ~128 K characters is one of V8's large objects: making one with the cost report
 * added, then encoding it for the socket, cost ~0.85 ms on a 131 KB body where copying the
 * bytes cost ~0.07 ms; smaller bodies are cheaper as text (docs/decisions.md, "Whole-response cache").
 */
const LARGE_BODY_CHARS = 64 * 1024;

/** The serialised result as the body to keep and send: bytes when large. */
export function bodyOf(json: string): Body {
  return json.length >= LARGE_BODY_CHARS ? Buffer.from(json, 'utf8') : json;
}

/**
 * A response body (a JSON object, `{"data":…}` with or without `errors`, as the core
 * serialises it) with `"extensions":{"cost":…}` added as its last member: the body is
 * never parsed again, and a cached body stays the same for every caller.
 */
export function withCost(body: Body, report: CostReport): Body {
  const member = `,"extensions":{"cost":${costJson(report)}}}`;
  if (typeof body === 'string') return `${body.slice(0, body.lastIndexOf('}'))}${member}`;
  return Buffer.concat([body.subarray(0, body.lastIndexOf(0x7d)), Buffer.from(member)]);
}

/** The HTTP headers of a charged operation: the bucket's size and what is left in it. */
export function costHeaders(report: CostReport): Record<string, number> {
  return { 'x-cost-limit': report.throttleStatus.maximumAvailable, 'x-cost-remaining': report.throttleStatus.currentlyAvailable };
}

/**
 * For a transport whose refusal has no `extensions` of its own (a graphql-ws `error`
 * message): each error of a refusal that reached the bucket carries `extensions.cost`…
 */
export function carryingCost(error: GraphQLError, report: CostReport): GraphQLError {
  return new GraphQLError(error.message, { extensions: { ...error.extensions, cost: report } });
}

/** …which the formatted error keeps (./errors.ts `formatError` keeps only the code). */
export function keepingCost(error: GraphQLError, formatted: GraphQLFormattedError): GraphQLFormattedError {
  const cost = error.extensions?.['cost'];
  return cost === undefined ? formatted : { ...formatted, extensions: { ...formatted.extensions, cost } };
}
