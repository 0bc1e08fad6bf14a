import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { cookieFromHeader, credentialFrom, type Credential } from '../../auth/caller.js';
import { AUTH_COOKIE } from '../../auth/cookies.js';
import { isAllowedOrigin, type CorsPolicy } from '../../http/cors.js';

/**
 * Where a WebSocket's credential comes from (docs/subscriptions.md): the
 * `connection_init` payload `{authorization: "Bearer <token>"}`, else the `auth-token`
 * cookie of the upgrade request — read by the account area's own helpers, as over
 * HTTP. Verifying it is the authenticator's job; a refused one closes the socket 4403.
 */

/**
 * The credential the connection presents. An `authorization` member (any letter case)
 * decides on its own, as an Authorization header does over HTTP: present but malformed
 * is a refused credential, not a fall-back to the cookie.
 */
export function credentialFromParams(params: Readonly<Record<string, unknown>> | undefined, cookieToken: string | undefined): Credential | undefined {
  const entry = params && Object.entries(params).find(([key]) => key.toLowerCase() === 'authorization');
  if (!entry || entry[1] === undefined || entry[1] === null) return cookieToken ? { source: 'cookie', token: cookieToken } : undefined;
  if (typeof entry[1] !== 'string') return { source: 'header', token: undefined };
  return credentialFrom({ authorization: entry[1] }, undefined);
}

/**
 * The `auth-token` cookie, when the upgrade may use it. Browsers send cookies on a
 * cross-origin WebSocket handshake and no CORS check applies, so (the WebSocket form of
 * the CSRF rule in docs/browser-apps.md) a cookie counts only when the page's Origin is
 * PUBLIC_URL's origin, the server's own host, or on the CORS allow-list; clients without
 * an Origin (not browsers) may use it. Other pages can authenticate in `connection_init`.
 */
export function cookieToken(request: IncomingMessage, publicUrl: string, cors: CorsPolicy): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  const origin = request.headers.origin;
  if (origin !== undefined && !isOwnOrigin(origin, request.headers.host, publicUrl) && !isAllowedOrigin(origin, cors)) return undefined;
  return cookieFromHeader(header, AUTH_COOKIE);
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
export function clientIp(request: { headers: IncomingHttpHeaders; socket: { remoteAddress?: string | undefined } }, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = request.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return request.socket.remoteAddress ?? 'unknown';
}
