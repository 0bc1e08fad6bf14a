import type {} from '@fastify/cookie';
import type { FastifyRequest } from 'fastify';
import { ANONYMOUS, isRole, type Caller } from '../domain/caller.js';
import { AUTH_COOKIE } from './cookies.js';
import type { SessionStore, SessionUser } from './sessions.js';
import type { AccessClaims, AccessTokens } from './tokens.js';

/**
 * Who is asking (SPEC section 4). The credential is `Authorization: Bearer <token>`,
 * else the `auth-token` cookie. A missing, malformed, expired, forged or revoked token
 * is not an error: the caller is anonymous. For a valid token the session is looked up
 * with its user in one query, so a revoked session or a deleted user stops working at
 * once and the role is always the current one (the token's `role` claim is only a
 * hint for clients). Resolved once per request and memoised on it.
 */

export interface Identity {
  caller: Caller;
  /** The live session and its user's current record, when signed in. */
  session?: SessionUser;
  claims?: AccessClaims;
}

const NOBODY: Identity = Object.freeze({ caller: ANONYMOUS });

type Headers = Record<string, string | string[] | undefined>;

export class CallerResolver {
  private readonly memo = new WeakMap<object, Promise<Identity>>();

  constructor(
    private readonly tokens: AccessTokens,
    private readonly sessions: SessionStore,
  ) {}

  /** The identity of a Fastify request (cookies parsed by @fastify/cookie), once per request. */
  identify(request: FastifyRequest): Promise<Identity> {
    let identity = this.memo.get(request);
    if (!identity) {
      identity = this.fromToken(credentialOf(request.headers, request.cookies));
      this.memo.set(request, identity);
    }
    return identity;
  }

  async caller(request: FastifyRequest): Promise<Caller> {
    return (await this.identify(request)).caller;
  }

  /** For other transports (the WebSocket upgrade request, `connection_init` payloads). */
  fromHeaders(headers: Headers): Promise<Identity> {
    return this.fromToken(credentialOf(headers, undefined));
  }

  /** From a raw access token (no `Bearer ` prefix). */
  async fromToken(token: string | undefined): Promise<Identity> {
    if (!token) return NOBODY;
    const claims = await this.tokens.verify(token);
    if (!claims) return NOBODY;
    const session = await this.sessions.lookup(claims.sid);
    if (!session || session.user.id !== claims.sub || !isRole(session.user.role)) return NOBODY;
    const caller: Caller = { kind: 'user', id: session.user.id, role: session.user.role, sessionId: session.sessionId };
    return { caller, session, claims };
  }
}

/** The bearer token if an Authorization header is present (even a bad one), else the cookie. */
export function credentialOf(headers: Headers, cookies: Record<string, string | undefined> | undefined): string | undefined {
  const authorization = first(headers['authorization']);
  if (authorization !== undefined) {
    const match = /^Bearer[ ]+([^\s]+)\s*$/i.exec(authorization);
    return match?.[1];
  }
  if (cookies) return cookies[AUTH_COOKIE] || undefined;
  const header = first(headers['cookie']);
  return header ? cookieFromHeader(header, AUTH_COOKIE) : undefined;
}

/** One cookie's value from a raw Cookie header (the first occurrence, as browsers send the most specific first). */
export function cookieFromHeader(header: string, name: string): string | undefined {
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim();
    try {
      return decodeURIComponent(raw) || undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
