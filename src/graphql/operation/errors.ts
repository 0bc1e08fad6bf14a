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

/** An error raised before execution: it makes the whole response a 4xx with no `data`. */
export class RequestError extends Error {
  constructor(
    readonly errors: readonly GraphQLError[],
    readonly status = 400,
    /** Response headers the refusal needs (`Allow` on a 405, `WWW-Authenticate` on a 401). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(errors[0]?.message ?? 'Bad request');
  }
}

export function requestError(message: string, code: WireCode, status = 400, headers?: Record<string, string>): RequestError {
  return new RequestError([new GraphQLError(message, { extensions: { code } })], status, headers);
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
