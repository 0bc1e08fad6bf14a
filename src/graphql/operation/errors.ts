import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { isAppError, type WireCode } from '../../errors.js';

/**
 * The one place where errors become what clients see: `{message, locations?, path?,
 * extensions: {code}}`. Typed AppErrors keep their message and code; GraphQL's own
 * request errors keep theirs; anything else is masked as `Internal server error`
 * and handed to `onInternal` for the log.
 */
export interface FormatOptions {
  isProduction: boolean;
  onInternal: (error: unknown) => void;
  /** Sees the code of every error formatted (observability: errors by code). */
  onCode?: (code: string) => void;
}

export const INTERNAL_MESSAGE = 'Internal server error';

/**
 * A request refused before execution: the whole response has no `data` and the status
 * of the refusal. Each kind of refusal is a class below that fixes its code and status
 * (docs/errors.md), so call sites name the refusal and never a code or a status.
 */
export class RequestError extends Error {
  constructor(
    readonly errors: readonly GraphQLError[],
    readonly status = 400,
    /** Response headers the refusal needs (`Allow` on a 405, `Retry-After` on a 429 or 503). */
    readonly headers: Readonly<Record<string, string | number>> = {},
  ) {
    super(errors[0]?.message ?? 'Bad request');
  }
}

function one(message: string, code: WireCode): GraphQLError[] {
  return [new GraphQLError(message, { extensions: { code } })];
}

/** 400 `BAD_REQUEST`: a malformed request (body, members, persisted-query extension, nesting). */
export class BadRequest extends RequestError {
  constructor(message = 'Bad request') {
    super(one(message, 'BAD_REQUEST'), 400);
  }
}

/** 400 `GRAPHQL_VALIDATION_FAILED` raised by the service itself (an unknown operation name). */
export class ValidationFailed extends RequestError {
  constructor(message: string) {
    super(one(message, 'GRAPHQL_VALIDATION_FAILED'), 400);
  }
}

/** 400 `GRAPHQL_VALIDATION_FAILED`: variables that do not match their declared types (graphql's own messages). */
export class InvalidVariables extends RequestError {
  constructor(errors: readonly GraphQLError[]) {
    super(errors.map((e) => withCode(e, 'GRAPHQL_VALIDATION_FAILED')), 400);
  }
}

/** 401 `UNAUTHENTICATED`: a credential was presented but is not valid (docs/permissions.md). */
export class Unauthenticated extends RequestError {
  constructor() {
    super(one('Invalid or expired credentials', 'UNAUTHENTICATED'), 401);
  }
}

/** 405 `METHOD_NOT_ALLOWED`, with the methods that are. */
export class MethodNotAllowed extends RequestError {
  constructor(message: string, allow: string) {
    super(one(message, 'METHOD_NOT_ALLOWED'), 405, { allow });
  }
}

/** 406 `NOT_ACCEPTABLE`: the client accepts neither JSON type. */
export class NotAcceptable extends RequestError {
  constructor() {
    super(one('Not Acceptable', 'NOT_ACCEPTABLE'), 406);
  }
}

/** 413 `PAYLOAD_TOO_LARGE`: a body over 1 MiB. */
export class PayloadTooLarge extends RequestError {
  constructor() {
    super(one('Request body exceeds 1 MiB', 'PAYLOAD_TOO_LARGE'), 413);
  }
}

/** 415 `UNSUPPORTED_MEDIA_TYPE`: a body that is not JSON. */
export class UnsupportedMediaType extends RequestError {
  constructor(message = 'Unsupported Media Type') {
    super(one(message, 'UNSUPPORTED_MEDIA_TYPE'), 415);
  }
}

/** 429 `RATE_LIMITED`, with the limit's headers (`retry-after` among them). */
export class RateLimited extends RequestError {
  static readonly message = 'Too many requests';
  constructor(headers: Readonly<Record<string, string | number>> = {}, message = RateLimited.message) {
    super(one(message, 'RATE_LIMITED'), 429, headers);
  }
}

/**
 * 400 `MAX_COMPLEXITY`: an operation that asks more than a whole bucket of cost
 * (`COST_LIMIT` below `QUERY_MAX_COMPLEXITY`), which no wait would let run (docs/limits.md, "Cost").
 */
export class CostOverLimit extends RequestError {
  constructor() {
    super(one('Query cost exceeds the cost limit', 'MAX_COMPLEXITY'), 400);
  }
}

/** 503 `OVERLOADED`, with `Retry-After` (docs/limits.md). */
export class Overloaded extends RequestError {
  constructor(message: string, retryAfterSeconds: number) {
    super(one(message, 'OVERLOADED'), 503, { 'retry-after': String(retryAfterSeconds) });
  }
}

/**
 * Over a cap on long-lived connections (src/http/connection-caps.ts), with `Retry-After`:
 * 429 `RATE_LIMITED` when the client holds its share, 503 `OVERLOADED` when the instance is full.
 */
export function tooManyConnections(status: 429 | 503, message: string, retryAfterSeconds: number): RateLimited | Overloaded {
  return status === 429 ? new RateLimited({ 'retry-after': String(retryAfterSeconds) }, message) : new Overloaded(message, retryAfterSeconds);
}

/** `PERSISTED_QUERY_NOT_FOUND` with 200: an unknown hash, which the client resends with its text. */
export class PersistedQueryNotFound extends RequestError {
  constructor() {
    super(one('PersistedQueryNotFound', 'PERSISTED_QUERY_NOT_FOUND'), 200);
  }
}

/** `PERSISTED_QUERY_NOT_FOUND` with 400: `PERSISTED_QUERIES=only` and a document off the allow-list. */
export class PersistedQueryNotAllowed extends RequestError {
  constructor() {
    super(one('Only registered operations are accepted', 'PERSISTED_QUERY_NOT_FOUND'), 400);
  }
}

/** `TOO_MANY_SUBSCRIPTIONS`: a socket's subscription past its cap (an `error` message for that one). */
export class TooManySubscriptions extends RequestError {
  constructor(max: number) {
    super(one(`At most ${max} active subscriptions per connection`, 'TOO_MANY_SUBSCRIPTIONS'), 400);
  }
}

/** 500 `INTERNAL_ERROR`: something unexpected around the request (never its details). */
export class InternalError extends RequestError {
  constructor() {
    super(one(INTERNAL_MESSAGE, 'INTERNAL_ERROR'), 500);
  }
}

export function withCode(error: GraphQLError, code: WireCode): GraphQLError {
  // graphql-jit's own GraphQLError (variable coercion, non-null violations) may have no `extensions` at all.
  if (typeof error.extensions?.['code'] === 'string') return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

export function formatError(error: GraphQLError, options: FormatOptions): GraphQLFormattedError {
  const original = error.originalError;
  let message: string;
  let extensions: Record<string, unknown>;

  if (isAppError(original)) {
    message = original.message;
    extensions = { code: original.code };
    if ('argument' in original && typeof original.argument === 'string') extensions['argument'] = original.argument;
  } else if (original && !(original instanceof GraphQLError)) {
    // Thrown by a resolver or a library: never shown. graphql-jit reports a leaf value
    // that fails serialisation (and other internal faults) the same way.
    options.onInternal(original);
    message = INTERNAL_MESSAGE;
    extensions = { code: 'INTERNAL_ERROR' satisfies WireCode };
  } else {
    const code = error.extensions?.['code'];
    message = options.isProduction ? withoutSuggestions(error.message) : error.message;
    extensions = { code: typeof code === 'string' ? code : ('INTERNAL_ERROR' satisfies WireCode) };
    // A GraphQLError raised during execution without a code is an internal fault
    // (e.g. a non-null field resolved to null); keep the message outside production.
    if (typeof code !== 'string' && options.isProduction && error.path) message = INTERNAL_MESSAGE;
  }

  options.onCode?.(extensions['code'] as string); // observability:
  const formatted: GraphQLFormattedError = { message, extensions };
  if (error.locations) (formatted as { locations?: unknown }).locations = error.locations;
  if (error.path) (formatted as { path?: unknown }).path = error.path;
  return formatted;
}

/** graphql-js appends `Did you mean "x"?` hints, which describe the schema; production drops them. */
function withoutSuggestions(message: string): string {
  return message.replace(/\s*Did you mean [^?]*\?$/, '');
}
