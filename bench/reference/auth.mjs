/**
 * The caller of a request, as a plain implementation would check it on every request:
 * the bearer token is an HS256 JWT signed with AUTH_SECRET's UTF-8 bytes (iss, aud and
 * typ checked as src/auth/tokens.ts does), and its session row must be live, with the
 * role read from the user's current record (as src/auth/caller.ts does). Anything
 * else is anonymous. Cookies are not read: the bench sends bearer tokens only.
 */
import { jwtVerify } from 'jose';

const ANONYMOUS = null;

export function createAuth({ secret, issuer, store }) {
  const key = new TextEncoder().encode(secret);
  return async function callerOf(authorization) {
    const match = authorization && /^Bearer +(\S+)\s*$/i.exec(authorization);
    if (!match) return ANONYMOUS;
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
      return ANONYMOUS;
    }
    const [session] = await store.all('session', [claims.sid]);
    if (!session || session.revoked_at !== null || Date.parse(session.expires_at) <= Date.now()) return ANONYMOUS;
    if (session.user_id !== claims.sub) return ANONYMOUS;
    return { id: session.user_id, role: session.role };
  };
}
