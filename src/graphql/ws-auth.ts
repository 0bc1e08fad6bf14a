import type { IncomingMessage } from 'node:http';

/**
 * Where a WebSocket's credentials come from (SPEC §5): the `connection_init` payload
 * `{authorization: "Bearer <token>"}`, else the `auth-token` cookie of the upgrade
 * request. These helpers only extract the token; verifying it is the authenticator's
 * job, and a bad token is anonymous, as over HTTP.
 */

export const AUTH_COOKIE = 'auth-token';

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * The token the connection uses. An `authorization` member (any letter case) decides
 * on its own: when it is present but malformed the socket is anonymous, it does not
 * fall back to the cookie.
 */
export function tokenFromParams(params: Readonly<Record<string, unknown>> | undefined, cookieToken: string | undefined): string | undefined {
  if (params) {
    for (const [key, value] of Object.entries(params)) {
      if (key.toLowerCase() !== 'authorization') continue;
      return typeof value === 'string' ? BEARER.exec(value)?.[1] : undefined;
    }
  }
  return cookieToken;
}

/**
 * The `auth-token` cookie, when the upgrade may use it. Browsers send cookies on a
 * cross-origin WebSocket handshake and no CORS check applies, so (the WebSocket form of
 * SPEC §2's CSRF rule) a cookie counts only when the page's Origin is PUBLIC_URL's
 * origin or the server's own host; clients without an Origin (not browsers) may use it.
 * A page of another origin can still authenticate through `connection_init`.
 */
export function cookieToken(request: IncomingMessage, publicUrl: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const origin = request.headers.origin;
  if (origin !== undefined && !isOwnOrigin(origin, request.headers.host, publicUrl)) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== AUTH_COOKIE) continue;
    const value = part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    try {
      return decodeURIComponent(value) || undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function isOwnOrigin(origin: string, host: string | undefined, publicUrl: string): boolean {
  try {
    const url = new URL(origin);
    return url.origin === new URL(publicUrl).origin || (host !== undefined && url.host === host.toLowerCase());
  } catch {
    return false;
  }
}

/** The client address for the rate limit: X-Forwarded-For's first entry behind a trusted proxy. */
export function clientIp(request: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return request.socket.remoteAddress ?? 'unknown';
}
