import type { IncomingHttpHeaders } from 'node:http';
import { BadRequest, UnsupportedMediaType } from '../operation/errors.js';
import { assertNesting } from '../operation/nesting.js';
import type { OperationParams } from '../operation/request.js';
import { prefersHtml } from './media.js';

/**
 * Reads `{query, variables, operationName, extensions}` from a GET query string or a
 * JSON POST body, refusing everything malformed with the right status and code
 * (docs/graphql-endpoint.md, docs/errors.md).
 */

/** What reading the parameters needs of a request. */
export interface RawGraphQLRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string | null;
}

export function readParams(req: RawGraphQLRequest): OperationParams {
  let raw: Record<string, unknown>;
  if (req.method === 'GET') {
    const search = new URLSearchParams(req.url.split('?', 2)[1] ?? '');
    raw = { query: search.get('query') ?? undefined, operationName: search.get('operationName') ?? undefined };
    for (const key of ['variables', 'extensions'] as const) {
      const value = search.get(key);
      if (value) raw[key] = parseJson(value, `${key} must be a JSON object`);
    }
  } else {
    const contentType = (firstHeader(req.headers, 'content-type') ?? '').toLowerCase().replace(/\s/g, '');
    const [mediaType, charset = 'charset=utf-8'] = contentType.split(';');
    if (mediaType !== 'application/json' || (charset !== 'charset=utf-8' && charset !== 'charset=utf8')) {
      throw new UnsupportedMediaType('Content-Type must be application/json');
    }
    if (typeof req.body !== 'string' || req.body.length === 0) throw new BadRequest('Missing body');
    const parsed = parseJson(req.body, 'Body is not valid JSON');
    assertNesting(parsed, 'The request body');
    if (Array.isArray(parsed)) throw new BadRequest('Batched operations are not supported');
    if (typeof parsed !== 'object' || parsed === null) throw new BadRequest('Body must be a JSON object');
    raw = parsed as Record<string, unknown>;
  }
  const { query, variables, operationName, extensions } = raw;
  if (query !== undefined && query !== null && typeof query !== 'string') throw new BadRequest('query must be a string');
  if (!isOptionalObject(variables)) throw new BadRequest('variables must be an object');
  if (!isOptionalObject(extensions)) throw new BadRequest('extensions must be an object');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    throw new BadRequest('operationName must be a string');
  }
  return {
    query: query ?? undefined,
    variables: (variables as Record<string, unknown> | null | undefined) ?? undefined,
    operationName: (operationName as string | null | undefined) ?? undefined,
    extensions: (extensions as Record<string, unknown> | null | undefined) ?? undefined,
  };
}

/** A browser asking for the GraphiQL page rather than for a result. */
export function wantsHtml(req: Pick<RawGraphQLRequest, 'url' | 'headers'>): boolean {
  return prefersHtml(firstHeader(req.headers, 'accept')) && !new URLSearchParams(req.url.split('?', 2)[1] ?? '').has('query');
}

export function firstHeader(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(text: string, message: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new BadRequest(message);
  }
}

function isOptionalObject(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'object' && !Array.isArray(value));
}
