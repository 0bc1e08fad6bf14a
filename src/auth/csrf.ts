import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * CSRF protection for the account area's form posts: the signed double-submit cookie
 * (OWASP). `GET /api/auth/csrf` (and the pages) set an HttpOnly cookie holding
 * `<token>.<HMAC(token)>` and hand out `<token>`; a form post must carry the token
 * and the matching cookie. A cross-site page can neither read the token nor plant a
 * cookie that verifies (the HMAC key never leaves the server, and in production the
 * cookie is `__Host-` prefixed, so a sibling subdomain cannot set it either).
 */

const TOKEN_BYTES = 32;

/** Constant-time string equality for secrets of any length. */
export function safeEqual(a: string, b: string): boolean {
  const x = createHash('sha256').update(a, 'utf8').digest();
  const y = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(x, y) && a.length === b.length;
}

export class CsrfTokens {
  constructor(private readonly key: Buffer) {}

  /** A fresh token and the cookie value that vouches for it. */
  issue(): { token: string; cookie: string } {
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    return { token, cookie: `${token}.${this.mac(token)}` };
  }

  /** The token inside a cookie value, when the cookie is genuine. */
  tokenFromCookie(cookie: string | undefined): string | undefined {
    if (typeof cookie !== 'string' || cookie.length > 200) return undefined;
    const dot = cookie.indexOf('.');
    if (dot <= 0) return undefined;
    const token = cookie.slice(0, dot);
    return safeEqual(cookie.slice(dot + 1), this.mac(token)) ? token : undefined;
  }

  /** A form's token matches a genuine cookie. */
  verify(cookie: string | undefined, submitted: unknown): boolean {
    const token = this.tokenFromCookie(cookie);
    return token !== undefined && typeof submitted === 'string' && submitted.length > 0 && safeEqual(token, submitted);
  }

  private mac(token: string): string {
    return createHmac('sha256', this.key).update(token, 'utf8').digest('base64url');
  }
}
