import type {} from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import { ACCESS_TOKEN_TTL_SECONDS } from './tokens.js';

/**
 * The account area's cookies, exactly as README "Tokens, cookies and lifetimes" lists
 * them. Every cookie is HttpOnly (no script needs to read one), Secure in production.
 * The refresh token's path is `/api/auth` (refresh and sign-out, never /graphql); the
 * earlier path `/api/auth/refresh` is cleared whenever the session cookies are written.
 */

export const AUTH_COOKIE = 'auth-token';
export const REFRESH_COOKIE = 'refresh-token';
export const REFRESH_COOKIE_PATH = '/api/auth';
/** Where releases before the sign-out fix put the refresh cookie; browsers may still hold one there. */
export const LEGACY_REFRESH_COOKIE_PATH = '/api/auth/refresh';
export const REFRESH_COOKIE_MAX_AGE = 7 * 24 * 60 * 60;

/** The email typed into a failed sign-in, handed to the next /login render only. */
export const LOGIN_EMAIL_COOKIE = 'login-email';
export const LOGIN_EMAIL_MAX_AGE = 60;
const LOGIN_PATH = '/login';

/** `__Host-` in production: the browser then refuses it from a sibling subdomain or over http. */
export function csrfCookieName(secure: boolean): string {
  return secure ? '__Host-csrf-token' : 'csrf-token';
}

/** The OAuth flow cookie, scoped to the provider's callback path. */
export const OAUTH_FLOW_COOKIE = 'oauth-flow';
export const OAUTH_FLOW_MAX_AGE = 10 * 60;

/**
 * Every value of one cookie in a raw Cookie header, in the order sent (the most
 * specific path first, RFC 6265 section 5.4), not yet percent-decoded.
 */
export function rawCookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const values: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq >= 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  return values;
}

export class AuthCookies {
  constructor(private readonly secure: boolean) {}

  get csrfName(): string {
    return csrfCookieName(this.secure);
  }

  setSession(reply: FastifyReply, tokens: { accessToken: string; refreshToken: string }): void {
    this.clearLegacyRefresh(reply);
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
    this.clearLegacyRefresh(reply);
    this.clearAccessToken(reply);
    reply.clearCookie(REFRESH_COOKIE, { httpOnly: true, sameSite: 'strict', path: REFRESH_COOKIE_PATH, secure: this.secure });
  }

  /** Only the access token: a client whose token was refused may still refresh. */
  clearAccessToken(reply: FastifyReply): void {
    reply.clearCookie(AUTH_COOKIE, { httpOnly: true, sameSite: 'lax', path: '/', secure: this.secure });
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

  /** Sent only to /login, for a minute: the failed sign-in's email, so the form can keep it. */
  setLoginEmail(reply: FastifyReply, email: string): void {
    reply.setCookie(LOGIN_EMAIL_COOKIE, email, {
      httpOnly: true,
      sameSite: 'lax',
      path: LOGIN_PATH,
      maxAge: LOGIN_EMAIL_MAX_AGE,
      secure: this.secure,
    });
  }

  clearLoginEmail(reply: FastifyReply): void {
    reply.clearCookie(LOGIN_EMAIL_COOKIE, { httpOnly: true, sameSite: 'lax', path: LOGIN_PATH, secure: this.secure });
  }

  /**
   * Written before the current cookies, so a client that keeps cookies by name only
   * (no paths) ends up with the current refresh token, not an empty one.
   */
  private clearLegacyRefresh(reply: FastifyReply): void {
    reply.clearCookie(REFRESH_COOKIE, { httpOnly: true, sameSite: 'strict', path: LEGACY_REFRESH_COOKIE_PATH, secure: this.secure });
  }
}
