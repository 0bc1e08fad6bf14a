import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Backends } from '../backends.js';
import type { Config } from '../config.js';
import { isRole, type Role } from '../domain/caller.js';
import type { Services } from '../domain/services.js';
import { safeCallbackUrl } from './callback-url.js';
import { CallerResolver, INVALID_TOKEN_CHALLENGE, type Identity } from './caller.js';
import { AuthCookies } from './cookies.js';
import { Credentials } from './credentials.js';
import { CsrfTokens } from './csrf.js';
import { authDb } from './db.js';
import { deriveKeys } from './keys.js';
import { ExternalAccounts } from './oauth/accounts.js';
import { FlowSealer } from './oauth/flow.js';
import { createProviders, type ExternalProvider } from './oauth/providers.js';
import { PasswordHasher } from './passwords.js';
import { RedisSlidingWindow } from '../rate-limit/redis-sliding-window.js';
import { RequestLimit } from '../rate-limit/request-limit.js';
import { MemorySlidingWindow, type SlidingWindow } from '../rate-limit/sliding-window.js';
import { LOGIN_FAILURE_LIMIT, LOGIN_FAILURE_WINDOW_MS, LoginThrottle } from './login-throttle.js';
import { resolveAuthSecret } from './secret.js';
import { SessionStore, type SessionInfo } from './sessions.js';
import { AccessTokens } from './tokens.js';

/** What a successful sign-in or refresh hands out. */
export interface SessionTokens {
  accessToken: string;
  /** Access-token expiry, ISO 8601. */
  expiresAt: string;
  refreshToken: string;
  session: SessionInfo;
}

/**
 * The account area's parts, built once per app from configuration. Routes, pages and
 * the GraphQL adapter all reach authentication through this one object.
 */
export class AuthService {
  readonly publicUrl: string;
  readonly secure: boolean;
  readonly hasher: PasswordHasher;
  readonly tokens: AccessTokens;
  readonly sessions: SessionStore;
  readonly callers: CallerResolver;
  readonly csrf: CsrfTokens;
  readonly cookies: AuthCookies;
  /** Request counts for every rate limit, HTTP and WebSocket (src/rate-limit/request-limit.ts). */
  readonly requestLimit: RequestLimit;
  readonly credentials: Credentials;
  readonly providers: Map<string, ExternalProvider>;
  readonly external: ExternalAccounts;
  readonly flows: FlowSealer;

  constructor(
    readonly config: Config,
    backends: Backends,
    readonly services: Services,
    onStoreError: (err: unknown) => void = () => {},
  ) {
    const keys = deriveKeys(resolveAuthSecret(config).secret);
    const db = authDb(backends.db);
    this.publicUrl = config.publicUrl;
    this.secure = config.isProduction;
    this.hasher = new PasswordHasher(config.bcryptCost, config.bcryptConcurrency);
    this.tokens = new AccessTokens(keys.accessToken, config.publicUrl);
    this.sessions = new SessionStore(db, { versions: backends.versions });
    this.callers = new CallerResolver(this.tokens, this.sessions);
    this.csrf = new CsrfTokens(keys.csrf);
    this.cookies = new AuthCookies(this.secure);
    // Security counters in stores of their own, never in a cache (docs/limits.md).
    const { redis } = backends;
    const prefix = config.redisKeyPrefix;
    this.requestLimit = new RequestLimit(config.rateLimit.max, config.rateLimit.windowMs, redis && { client: redis, keyPrefix: `${prefix}rl` });
    const signIn = { limit: LOGIN_FAILURE_LIMIT, windowMs: LOGIN_FAILURE_WINDOW_MS };
    const signInWindow: SlidingWindow = redis ? new RedisSlidingWindow(redis, `${prefix}signin:`, signIn, onStoreError) : new MemorySlidingWindow(signIn);
    this.credentials = new Credentials(services.users, this.hasher, new LoginThrottle(signInWindow, keys.throttle));
    this.providers = createProviders(config.oauthProviders);
    this.external = new ExternalAccounts(db, services.users);
    this.flows = new FlowSealer(keys.oauthFlow);
  }

  /** Starts a session for a user who just signed in and mints its first tokens. */
  async startSession(user: { id: string; role: Role }): Promise<SessionTokens> {
    const { session, refreshToken } = await this.sessions.create(user.id);
    const access = await this.tokens.issue(
      { userId: user.id, role: user.role, sessionId: session.id },
      Math.floor(Date.parse(session.expiresAt) / 1000),
    );
    return { accessToken: access.token, expiresAt: access.expiresAt, refreshToken, session };
  }

  /** Rotates a refresh token; a fresh access token carries the user's current role. */
  async refresh(refreshToken: string): Promise<{ ok: true; tokens: SessionTokens } | { ok: false; reason: string }> {
    const outcome = await this.sessions.rotate(refreshToken);
    if (!outcome.ok) return outcome;
    const live = await this.sessions.lookup(outcome.session.id);
    if (!live || !isRole(live.user.role)) return { ok: false, reason: 'revoked' };
    const access = await this.tokens.issue(
      { userId: live.user.id, role: live.user.role, sessionId: live.sessionId },
      Math.floor(Date.parse(live.expiresAt) / 1000),
    );
    return { ok: true, tokens: { accessToken: access.token, expiresAt: access.expiresAt, refreshToken: outcome.refreshToken, session: outcome.session } };
  }

  /** The CSRF token for this browser: the one its cookie vouches for, or a new one (cookie set). */
  csrfToken(request: FastifyRequest, reply: FastifyReply): string {
    const existing = this.csrf.tokenFromCookie(request.cookies[this.cookies.csrfName]);
    if (existing) return existing;
    const { token, cookie } = this.csrf.issue();
    this.cookies.setCsrf(reply, cookie);
    return token;
  }

  /**
   * Readies a 401 for a refused credential (`identity.rejected`): status, the RFC 6750
   * challenge, and the `auth-token` cookie cleared when the credential came as that
   * cookie, so the next request is anonymous. The caller sends its own body.
   */
  refuseCredential(reply: FastifyReply, identity: Pick<Identity, 'source'>): FastifyReply {
    if (identity.source === 'cookie') this.cookies.clearAccessToken(reply);
    return reply.code(401).header('www-authenticate', INVALID_TOKEN_CHALLENGE);
  }

  checkCsrf(request: FastifyRequest, submitted: unknown): boolean {
    return this.csrf.verify(request.cookies[this.cookies.csrfName], submitted);
  }

  callbackUrl(value: unknown, fallback = '/'): string {
    return safeCallbackUrl(value, this.publicUrl, fallback);
  }

  redirectUri(providerId: string): string {
    return `${this.publicUrl}/api/auth/callback/${providerId}`;
  }
}
