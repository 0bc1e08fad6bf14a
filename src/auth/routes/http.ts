import type { FastifyReply, FastifyRequest } from 'fastify';
import { REFRESH_COOKIE, rawCookieValues } from '../cookies.js';

/** Small helpers shared by the account routes: media types, bodies, `{error}` answers. */

export function mediaType(request: FastifyRequest): string | undefined {
  const value = request.headers['content-type'];
  return value ? value.split(';', 1)[0]!.trim().toLowerCase() : undefined;
}

export function isJson(request: FastifyRequest): boolean {
  return mediaType(request) === 'application/json';
}

export function isForm(request: FastifyRequest): boolean {
  return mediaType(request) === 'application/x-www-form-urlencoded';
}

/** The body as a plain record (anything else reads as empty). */
export function bodyOf(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
}

/** A form field or JSON member as a string; repeated form fields are refused (undefined). */
export function field(body: Record<string, unknown>, name: string): string | undefined {
  const value = Object.prototype.hasOwnProperty.call(body, name) ? body[name] : undefined;
  return typeof value === 'string' ? value : undefined;
}

export function sendError(reply: FastifyReply, status: number, error: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send({ error });
}

export function unsupportedMediaType(reply: FastifyReply, accepted = 'application/json'): FastifyReply {
  return sendError(reply, 415, `Content-Type must be ${accepted}`);
}

/** The raw query string of a request, without the `?` (empty when none). */
export function rawQuery(request: FastifyRequest): string {
  const index = request.url.indexOf('?');
  return index < 0 ? '' : request.url.slice(index + 1);
}

/** The sign-in page with an error code and where to go afterwards. */
export function loginWithError(error: string, callbackUrl: string): string {
  return `/login?${new URLSearchParams({ error, callbackUrl }).toString()}`;
}

/** At most one refresh-token cookie per path the service ever used (`/api/auth`, `/api/auth/refresh`). */
const MAX_REFRESH_COOKIES = 2;

/**
 * The refresh tokens a request carries, in the order sent (a more specific path first),
 * distinct, percent-decoded; undecodable values are skipped.
 */
export function refreshTokensOf(request: FastifyRequest): string[] {
  const tokens: string[] = [];
  for (const raw of rawCookieValues(request.headers.cookie, REFRESH_COOKIE)) {
    let token: string;
    try {
      token = decodeURIComponent(raw);
    } catch {
      continue;
    }
    if (token && !tokens.includes(token)) tokens.push(token);
    if (tokens.length === MAX_REFRESH_COOKIES) break;
  }
  return tokens;
}
