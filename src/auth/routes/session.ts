import type { FastifyInstance } from 'fastify';
import { credentialOf } from '../caller.js';
import type { AuthService } from '../service.js';
import { bodyOf, field, isForm, isJson, rawQuery, refreshTokensOf, sendError, unsupportedMediaType } from './http.js';

/**
 * The session endpoints: refresh, csrf, session, providers, signin, signout, and /api/me.
 * /api/me and /api/auth/session answer a refused access token with 401 (README
 * "Accounts and sign-in"); the others work whatever state the token is in.
 */
export async function sessionRoutes(app: FastifyInstance, auth: AuthService): Promise<void> {
  app.post('/api/auth/refresh', async (request, reply) => {
    // No body is needed; one that is sent must be JSON like every JSON endpoint's.
    if (request.headers['content-type'] !== undefined && !isJson(request)) return unsupportedMediaType(reply);
    // A browser that still holds a cookie at the old path sends both, that one first:
    // the first that rotates wins, and the answer moves the session to the new path.
    const tokens = refreshTokensOf(request);
    if (tokens.length === 0) return sendError(reply, 401, 'No refresh token');
    for (const token of tokens) {
      const result = await auth.refresh(token);
      if (!result.ok) continue;
      auth.cookies.setSession(reply, result.tokens);
      return reply.send({ accessToken: result.tokens.accessToken, expiresAt: result.tokens.expiresAt });
    }
    // Unknown, expired, revoked or reused: the cookies can never work again.
    auth.cookies.clearSession(reply);
    return sendError(reply, 401, 'Invalid refresh token');
  });

  app.get('/api/auth/csrf', async (request, reply) => reply.send({ csrfToken: auth.csrfToken(request, reply) }));

  app.get('/api/auth/session', async (request, reply) => {
    const identity = await auth.callers.identify(request);
    if (identity.rejected) return sendError(auth.refuseCredential(reply, identity), 401, INVALID_TOKEN);
    const { session } = identity;
    if (!session) return reply.type('application/json; charset=utf-8').send('null');
    const { id, name, email, role } = session.user;
    return reply.send({ user: { id, name, email, role }, expires: session.expiresAt });
  });

  app.get('/api/auth/providers', async (_request, reply) => {
    const base = `${auth.publicUrl}/api/auth`;
    const providers: Record<string, { id: string; name: string; type: string; signinUrl: string; callbackUrl: string }> = {
      credentials: {
        id: 'credentials',
        name: 'Credentials',
        type: 'credentials',
        signinUrl: `${base}/signin`,
        callbackUrl: `${base}/callback/credentials`,
      },
    };
    for (const provider of auth.providers.values()) {
      providers[provider.id] = {
        id: provider.id,
        name: provider.name,
        type: provider.type,
        signinUrl: `${base}/signin/${provider.id}`,
        callbackUrl: auth.redirectUri(provider.id),
      };
    }
    return reply.send(providers);
  });

  // The sign-in page lives at /login; this keeps the conventional address working.
  app.get('/api/auth/signin', async (request, reply) => {
    const query = rawQuery(request);
    return reply.redirect(query ? `/login?${query}` : '/login', 302);
  });

  app.post('/api/auth/signout', async (request, reply) => {
    if (!isForm(request) && !isJson(request)) return unsupportedMediaType(reply, 'application/x-www-form-urlencoded or application/json');
    const body = bodyOf(request);
    const submitted = field(body, 'csrfToken') ?? headerValue(request.headers['x-csrf-token']);
    if (!auth.checkCsrf(request, submitted)) return sendError(reply, 403, 'Invalid CSRF token');

    // A sign-out always revokes: the session the access token names — even an expired
    // one (signature, iss and aud still checked) — and the one the refresh-token cookie
    // belongs to, which is all that is left once the 15-minute auth-token cookie expired.
    // Both normally name one session; when they differ, the browser held both.
    const token = credentialOf(request.headers, request.cookies);
    const claims = token ? await auth.tokens.verify(token, { ignoreExpiry: true }) : null;
    if (claims) await auth.sessions.revoke(claims.sid);
    for (const refreshToken of refreshTokensOf(request)) await auth.sessions.revokeByRefreshToken(refreshToken);
    auth.cookies.clearSession(reply);
    return reply.redirect(auth.callbackUrl(field(body, 'callbackUrl')), 302);
  });

  app.get('/api/me', async (request, reply) => {
    const identity = await auth.callers.identify(request);
    if (identity.rejected) return sendError(auth.refuseCredential(reply, identity), 401, INVALID_TOKEN);
    const { session } = identity;
    // No credential at all: the bare challenge (RFC 6750 section 3.1), no error code.
    if (!session) return sendError(reply.header('www-authenticate', 'Bearer'), 401, 'Not signed in');
    const { id, name, email, role } = session.user;
    return reply.send({ user: { id, name, email, role } });
  });
}

const INVALID_TOKEN = 'Invalid or expired access token';

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}
