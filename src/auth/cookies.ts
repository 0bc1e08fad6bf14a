import type {} from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import { ACCESS_TOKEN_TTL_SECONDS } from './tokens.js';

/**
 * The account area's cookies, exactly as SPEC section 6 lists them. Every cookie is
 * HttpOnly (no script needs to read one), Secure in production.
 */

export const AUTH_COOKIE = 'auth-token';
export const REFRESH_COOKIE = 'refresh-token';
export const REFRESH_COOKIE_PATH = '/api/auth/refresh';
export const REFRESH_COOKIE_MAX_AGE = 7 * 24 * 60 * 60;

/** `__Host-` in production: the browser then refuses it from a sibling subdomain or over http. */
export function csrfCookieName(secure: boolean): string {
  return secure ? '__Host-csrf-token' : 'csrf-token';
}

/** The OAuth flow cookie, scoped to the provider's callback path. */
export const OAUTH_FLOW_COOKIE = 'oauth-flow';
export const OAUTH_FLOW_MAX_AGE = 10 * 60;

export class AuthCookies {
  constructor(private readonly secure: boolean) {}

  get csrfName(): string {
    return csrfCookieName(this.secure);
  }

  setSession(reply: FastifyReply, tokens: { accessToken: string; refreshToken: string }): void {
    reply.setCookie(AUTH_COOKIE, tokens.accessToken, {
      httpOnly: true,
      sameSite: 'lax',
      path: '/',
      maxAge: ACCESS_TOKEN_TTL_SECONDS,
      secure: this.secure,
    });
    reply.setCookie(REFRESH_COOKIE, tokens.refreshToken, {
      httpOnly: true,
      sameSite: 'strict',
      path: REFRESH_COOKIE_PATH,
      maxAge: REFRESH_COOKIE_MAX_AGE,
      secure: this.secure,
    });
  }

  clearSession(reply: FastifyReply): void {
    reply.clearCookie(AUTH_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure: this.secure });
    reply.clearCookie(REFRESH_COOKIE, { httpOnly: true, sameSite: 'strict', path: REFRESH_COOKIE_PATH, secure: this.secure });
  }

  setCsrf(reply: FastifyReply, value: string): void {
    // A session cookie (no Max-Age): the token lives as long as the browser session.
    reply.setCookie(this.csrfName, value, { httpOnly: true, sameSite: 'lax', path: '/', secure: this.secure });
  }

  /** Lax, not Strict: the provider sends the browser back with a cross-site top-level GET. */
  setOAuthFlow(reply: FastifyReply, provider: string, value: string): void {
    reply.setCookie(OAUTH_FLOW_COOKIE, value, {
      httpOnly: true,
      sameSite: 'lax',
      path: `/api/auth/callback/${provider}`,
      maxAge: OAUTH_FLOW_MAX_AGE,
      secure: this.secure,
    });
  }

  clearOAuthFlow(reply: FastifyReply, provider: string): void {
    reply.clearCookie(OAUTH_FLOW_COOKIE, { httpOnly: true, sameSite: 'lax', path: `/api/auth/callback/${provider}`, secure: this.secure });
  }
}
