/**
 * The caller of a request, as a plain implementation would check it on every request:
 * the bearer token is an HS256 JWT signed with AUTH_SECRET's UTF-8 bytes (iss, aud and
 * typ checked as src/auth/tokens.ts does), and its session row must be live, with the
 * role read from the user's current record (as src/auth/caller.ts does). No
 * credential is anonymous; a refused one is REJECTED (a 401, as docs/permissions.md
 * says). Cookies are not read: the bench sends bearer tokens only.
 */
import { jwtVerify } from 'jose';

const ANONYMOUS = null;
export const REJECTED = Symbol('rejected');

export function createAuth({ secret, issuer, store }) {
  const key = new TextEncoder().encode(secret);
  return async function callerOf(authorization) {
    const match = authorization && /^Bearer +(\S+)\s*$/i.exec(authorization);
    if (!authorization) return ANONYMOUS;
    if (!match) return REJECTED;
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(match[1], key, {
        algorithms: ['HS256'],
        issuer,
        audience: 'inkwell-api',
        typ: 'at+jwt',
        requiredClaims: ['sub', 'sid', 'role', 'iat', 'exp'],
      }));
    } catch {
      return REJECTED;
    }
    const [session] = await store.all('session', [claims.sid]);
    if (!session || session.revoked_at !== null || Date.parse(session.expires_at) <= Date.now()) return REJECTED;
    if (session.user_id !== claims.sub) return REJECTED;
    return { id: session.user_id, role: session.role };
  };
}
