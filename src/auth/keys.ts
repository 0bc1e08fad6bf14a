import { hkdfSync } from 'node:crypto';

/**
 * The keys derived from AUTH_SECRET. Access tokens are signed with the secret's UTF-8
 * bytes exactly (docs/accounts.md); every other use gets its own HKDF-derived key, so a
 * value made for one purpose (a CSRF token, an OAuth flow cookie) can never be passed
 * off as another.
 */
export interface AuthKeys {
  /** HS256 key of the access tokens: the UTF-8 bytes of AUTH_SECRET. */
  readonly accessToken: Uint8Array;
  /** HMAC key of the CSRF double-submit cookie. */
  readonly csrf: Buffer;
  /** A256GCM key of the short-lived OAuth flow cookie (state, nonce, PKCE verifier). */
  readonly oauthFlow: Uint8Array;
  /** Keys the per-email failed-login counters, so the store never holds addresses. */
  readonly throttle: Buffer;
}

export function deriveKeys(secret: string): AuthKeys {
  const ikm = Buffer.from(secret, 'utf8');
  const derive = (purpose: string) => Buffer.from(hkdfSync('sha256', ikm, 'inkwell-auth', `inkwell ${purpose} v1`, 32));
  return {
    accessToken: new Uint8Array(ikm),
    csrf: derive('csrf'),
    oauthFlow: new Uint8Array(derive('oauth-flow')),
    throttle: derive('login-throttle'),
  };
}
