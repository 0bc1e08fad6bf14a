import type {} from '@fastify/cookie';
import type { FastifyRequest } from 'fastify';
import { ANONYMOUS, isRole, type Caller } from '../domain/caller.js';
import { AUTH_COOKIE, rawCookieValues } from './cookies.js';
import type { SessionStore, SessionUser } from './sessions.js';
import type { AccessClaims, AccessTokens } from './tokens.js';

/**
 * Who is asking (README "Accounts and sign-in"). The credential is
 * `Authorization: Bearer <token>`, else the `auth-token` cookie. No credential: anonymous.
 * A credential that is present but refused (malformed, forged, expired, revoked session,
 * deleted user) is anonymous too, and marked `rejected`, so a transport can answer 401
 * (RFC 6750 `invalid_token`) and the client knows to refresh. A valid token's session is
 * read with its user in one query, so revocation and role changes take effect at once.
 */

/** Where a credential came from. */
export type CredentialSource = 'header' | 'cookie';

export interface Identity {
  /** The signed-in caller; anonymous when no credential was presented or it was refused. */
  caller: Caller;
  /** The live session and its user's current record, when signed in. */
  session?: SessionUser;
  claims?: AccessClaims;
  /** Where the credential came from, whenever one was presented (accepted or refused). */
  source?: CredentialSource;
  /** Set when a credential was presented but refused; `caller` is then anonymous. */
  rejected?: true;
}

/** A presented credential; `token` undefined means present but malformed (e.g. `Authorization: Basic …`). */
export interface Credential {
  source: CredentialSource;
  token: string | undefined;
}

/** The challenge a 401 for a refused credential carries (RFC 6750 section 3.1). */
export const INVALID_TOKEN_CHALLENGE = 'Bearer error="invalid_token"';

const NOBODY: Identity = Object.freeze({ caller: ANONYMOUS });

type Headers = Record<string, string | string[] | undefined>;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The request's identity once asked for (CallerResolver.identify), on the request
     * itself: a WeakMap keyed by requests grew its table in old space with every request
     * (docs/decisions.md, "Nothing per request lives until a full collection").
     */
    identity: Promise<Identity> | null;
  }
}

export class CallerResolver {
  constructor(
    private readonly tokens: AccessTokens,
    private readonly sessions: SessionStore,
  ) {}

  /** The identity of a Fastify request (cookies parsed by @fastify/cookie), once per request. */
  identify(request: FastifyRequest): Promise<Identity> {
    return (request.identity ??= this.fromCredential(credentialFrom(request.headers, request.cookies)));
  }

  async caller(request: FastifyRequest): Promise<Caller> {
    return (await this.identify(request)).caller;
  }

  /** For other transports: an Authorization header, else the Cookie header (the WebSocket upgrade request). */
  fromHeaders(headers: Headers): Promise<Identity> {
    return this.fromCredential(credentialFrom(headers, undefined));
  }

  /** From a raw access token (no `Bearer ` prefix); undefined or empty means none was presented. */
  fromToken(token: string | undefined, source: CredentialSource = 'header'): Promise<Identity> {
    return this.fromCredential(token ? { source, token } : undefined);
  }

  async fromCredential(credential: Credential | undefined): Promise<Identity> {
    if (!credential) return NOBODY;
    const { source, token } = credential;
    const refused: Identity = { caller: ANONYMOUS, source, rejected: true };
    if (!token) return refused;
    const claims = await this.tokens.verify(token);
    if (!claims) return refused;
    const session = await this.sessions.lookup(claims.sid, claims.sub);
    if (!session || session.user.id !== claims.sub || !isRole(session.user.role)) return refused;
    const caller: Caller = { kind: 'user', id: session.user.id, role: session.user.role, sessionId: session.sessionId };
    return { caller, session, claims, source };
  }
}

/**
 * The credential a request presents: the Authorization header when it has a value (it
 * then decides alone: anything but `Bearer <token>` is a malformed credential, not a
 * fall-back to the cookie), else a non-empty `auth-token` cookie. A blank Authorization
 * header or an empty cookie (what a cleared cookie leaves) presents nothing.
 */
export function credentialFrom(headers: Headers, cookies: Record<string, string | undefined> | undefined): Credential | undefined {
  const authorization = first(headers['authorization']);
  if (authorization !== undefined && authorization.trim() !== '') {
    return { source: 'header', token: bearerToken(authorization) };
  }
  if (cookies) {
    const value = cookies[AUTH_COOKIE];
    return value ? { source: 'cookie', token: value } : undefined;
  }
  const raw = rawCookieValues(first(headers['cookie']), AUTH_COOKIE)[0];
  if (!raw) return undefined;
  return { source: 'cookie', token: decode(raw) };
}

/** The bearer token if an Authorization header is present (even a bad one), else the cookie. */
export function credentialOf(headers: Headers, cookies: Record<string, string | undefined> | undefined): string | undefined {
  return credentialFrom(headers, cookies)?.token;
}

/** One cookie's value from a raw Cookie header (the first occurrence, as browsers send the most specific first). */
export function cookieFromHeader(header: string, name: string): string | undefined {
  const raw = rawCookieValues(header, name)[0];
  return raw === undefined ? undefined : decode(raw);
}

function bearerToken(authorization: string): string | undefined {
  return /^Bearer[ ]+([^\s]+)\s*$/i.exec(authorization)?.[1];
}

function decode(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw) || undefined;
  } catch {
    return undefined;
  }
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
