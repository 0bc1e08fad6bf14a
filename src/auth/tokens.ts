import { SignJWT, errors, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { isRole, type Role } from '../domain/caller.js';

/**
 * Access tokens (docs/accounts.md): JWTs signed HS256 with the UTF-8 bytes of AUTH_SECRET,
 * carrying sub, role, sid, iat, exp, iss, aud; valid 15 minutes. Verification pins the
 * algorithm (so `alg: none`, RS256/HS512 confusion and the like are refused), checks
 * iss, aud and typ, and requires every claim. A token that fails any check is simply
 * not a credential: callers become anonymous.
 */

export const ACCESS_TOKEN_TTL_SECONDS = 15 * 60;
/** RFC 9068's media type: a JWT made for another purpose can never pass as an access token. */
const TOKEN_TYPE = 'at+jwt';
const ALGORITHM = 'HS256';
export const TOKEN_AUDIENCE = 'inkwell-api';

export interface AccessClaims {
  sub: string;
  role: Role;
  sid: string;
  iat: number;
  exp: number;
}

export interface IssuedAccessToken {
  token: string;
  /** Seconds since the epoch. */
  exp: number;
  expiresAt: string;
}

/** Tokens verified already: an HMAC check is a sizeable share of a request's CPU, and clients resend one token many times. */
const VERIFIED_TOKENS = 10_000;

export class AccessTokens {
  // Token text → its claims. Verification is a pure function of the text and the key, except
  // for expiry, which is checked again on every use.
  private readonly verified = new LRUCache<string, AccessClaims>({ max: VERIFIED_TOKENS });

  constructor(
    private readonly key: Uint8Array,
    /** PUBLIC_URL: who issues the tokens. */
    readonly issuer: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** `notAfter` (seconds) caps the expiry, so no token outlives its session. */
  async issue(subject: { userId: string; role: Role; sessionId: string }, notAfter?: number): Promise<IssuedAccessToken> {
    const iat = Math.floor(this.now() / 1000);
    const exp = Math.min(iat + ACCESS_TOKEN_TTL_SECONDS, notAfter ?? Number.POSITIVE_INFINITY);
    const token = await new SignJWT({ role: subject.role, sid: subject.sessionId })
      .setProtectedHeader({ alg: ALGORITHM, typ: TOKEN_TYPE })
      .setSubject(subject.userId)
      .setIssuer(this.issuer)
      .setAudience(TOKEN_AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, exp, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /**
   * The claims of a valid token, or null. `ignoreExpiry` is for sign-out only: a client
   * whose access token just expired may still name the session it wants to end.
   */
  async verify(token: string, options: { ignoreExpiry?: boolean } = {}): Promise<AccessClaims | null> {
    // A JWT is three base64url parts; refuse anything else before any parsing.
    if (token.length > 4096 || !/^[\w-]+\.[\w-]+\.[\w-]+$/.test(token)) return null;
    const known = this.verified.get(token);
    if (known) return options.ignoreExpiry || known.exp > Math.floor(this.now() / 1000) ? known : null;
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [ALGORITHM],
        issuer: this.issuer,
        audience: TOKEN_AUDIENCE,
        typ: TOKEN_TYPE,
        requiredClaims: ['sub', 'sid', 'role', 'iat', 'exp'],
        currentDate: new Date(this.now()),
        // Expiry is exact; a skew allowance would only lengthen stolen tokens' lives.
        clockTolerance: options.ignoreExpiry ? Number.MAX_SAFE_INTEGER : 0,
      });
      const { sub, sid, role, iat, exp } = payload as Record<string, unknown>;
      if (typeof sub !== 'string' || typeof sid !== 'string' || !isRole(role)) return null;
      if (typeof iat !== 'number' || typeof exp !== 'number') return null;
      const claims: AccessClaims = Object.freeze({ sub, sid, role, iat, exp });
      this.verified.set(token, claims);
      return claims;
    } catch (err) {
      if (err instanceof errors.JOSEError) return null;
      throw err;
    }
  }
}
