import type { FastifyInstance } from 'fastify';
import { credentialOf } from '../caller.js';
import { REFRESH_COOKIE } from '../cookies.js';
import type { AuthService } from '../service.js';
import { bodyOf, field, isForm, isJson, rawQuery, sendError, unsupportedMediaType } from './http.js';

/** The session endpoints: refresh, csrf, session, providers, signin, signout, and /api/me. */
export async function sessionRoutes(app: FastifyInstance, auth: AuthService): Promise<void> {
  app.post('/api/auth/refresh', async (request, reply) => {
    // No body is needed; one that is sent must be JSON like every JSON endpoint's.
    if (request.headers['content-type'] !== undefined && !isJson(request)) return unsupportedMediaType(reply);
    const token = request.cookies[REFRESH_COOKIE];
    if (!token) return sendError(reply, 401, 'No refresh token');
    const result = await auth.refresh(token);
    if (!result.ok) {
      // Unknown, expired, revoked or reused: the cookies can never work again.
      auth.cookies.clearSession(reply);
      return sendError(reply, 401, 'Invalid refresh token');
    }
    auth.cookies.setSession(reply, result.tokens);
    return reply.send({ accessToken: result.tokens.accessToken, expiresAt: result.tokens.expiresAt });
  });

  app.get('/api/auth/csrf', async (request, reply) => reply.send({ csrfToken: auth.csrfToken(request, reply) }));

  app.get('/api/auth/session', async (request, reply) => {
    const { session } = await auth.callers.identify(request);
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

    // The session the presented access token names — even an expired one: ending a
    // session must not need a fresh token. The signature, iss and aud are still checked.
    const token = credentialOf(request.headers, request.cookies);
    const claims = token ? await auth.tokens.verify(token, { ignoreExpiry: true }) : null;
    if (claims) await auth.sessions.revoke(claims.sid);
    auth.cookies.clearSession(reply);
    return reply.redirect(auth.callbackUrl(field(body, 'callbackUrl')), 302);
  });

  app.get('/api/me', async (request, reply) => {
    const { session } = await auth.callers.identify(request);
    if (!session) return sendError(reply, 401, 'Not signed in');
    const { id, name, email, role } = session.user;
    return reply.send({ user: { id, name, email, role } });
  });
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? undefined : value;
}
