/**
 * Errors that carry a stable `code`. Services throw these; one formatter turns them
 * into GraphQL errors or `{error}` bodies. Anything that is not an AppError is
 * unexpected and reaches clients only as `Internal server error`.
 * Every code a client can see is one `WireCode` (docs/errors.md).
 */

/** Codes of errors raised by the domain (services, permission checks). */
export type ErrorCode =
  | 'BAD_USER_INPUT'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'RATE_LIMITED'
  | 'INTERNAL_ERROR';

/** Codes of requests refused before or around execution, by the transports and the operation checks. */
export type RequestErrorCode =
  | 'GRAPHQL_PARSE_FAILED'
  | 'GRAPHQL_VALIDATION_FAILED'
  | 'MAX_DEPTH'
  | 'MAX_COMPLEXITY'
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'TOO_MANY_SUBSCRIPTIONS'
  | 'OVERLOADED'
  | 'BAD_REQUEST'
  | 'METHOD_NOT_ALLOWED'
  | 'NOT_ACCEPTABLE'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE';

/** Every `extensions.code` (and `code`) a client can receive, over any transport. */
export type WireCode = ErrorCode | RequestErrorCode;

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class BadUserInputError extends AppError {
  constructor(
    /** The argument (or input field) that was refused. */
    readonly argument: string,
    message: string,
  ) {
    super('BAD_USER_INPUT', message);
  }
}

export class UnauthenticatedError extends AppError {
  constructor(message = 'You must be signed in') {
    super('UNAUTHENTICATED', message);
  }
}

export class ForbiddenError extends AppError {
  constructor(message = 'You are not allowed to do this') {
    super('FORBIDDEN', message);
  }
}

export class NotFoundError extends AppError {
  constructor(entity: 'User' | 'Post' | 'Book' | 'Reaction') {
    super('NOT_FOUND', `${entity} not found`);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super('CONFLICT', message);
  }
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

/** Refusals answered at the HTTP level, before any route: status, code and message in one place (docs/errors.md). */
export const HTTP_REFUSALS = {
  duplicateHost: { status: 400, code: 'BAD_REQUEST', message: 'Bad request: more than one Host header' },
  originNotAllowed: { status: 403, code: 'FORBIDDEN', message: 'Origin not allowed' },
  overloaded: { status: 503, code: 'OVERLOADED', message: 'Server overloaded; retry later' },
} as const satisfies Record<string, { status: number; code: WireCode; message: string }>;

export type HttpRefusal = (typeof HTTP_REFUSALS)[keyof typeof HTTP_REFUSALS];

/**
 * A refusal's body in the shape of the area asked: `{errors}` on /graphql, `{error}`
 * elsewhere (with its `code` too when `withCode`).
 */
export function refusalBody(path: string, refusal: HttpRefusal, withCode = false): object {
  const { code, message } = refusal;
  if (path === '/graphql') return { errors: [{ message, extensions: { code } }] };
  return withCode ? { error: message, code } : { error: message };
}
