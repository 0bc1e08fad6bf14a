import type { FastifyInstance } from 'fastify';
import { INVALID_CREDENTIALS, RegistrationError } from '../credentials.js';
import { TOO_MANY_REQUESTS } from '../../rate-limit/limiter.js';
import type { AuthService } from '../service.js';
import { bodyOf, field, isForm, isJson, loginWithError, sendError, unsupportedMediaType } from './http.js';

/** Longer than any address an account can have (254): not worth keeping. */
const MAX_KEPT_EMAIL = 320;

/**
 * Email-and-password endpoints: register and login (JSON only, which a cross-site
 * form cannot send without a CORS preflight) and the sign-in page's form callback
 * (CSRF token required).
 */
export async function credentialRoutes(app: FastifyInstance, auth: AuthService): Promise<void> {
  app.post('/api/auth/register', async (request, reply) => {
    if (!isJson(request)) return unsupportedMediaType(reply);
    try {
      const user = await auth.credentials.register(bodyOf(request));
      return reply.code(201).send({ id: user.id, email: user.email });
    } catch (err) {
      if (err instanceof RegistrationError) return sendError(reply, err.status, err.message);
      throw err;
    }
  });

  app.post('/api/auth/login', async (request, reply) => {
    if (!isJson(request)) return unsupportedMediaType(reply);
    const body = bodyOf(request);
    const email = field(body, 'email');
    const password = field(body, 'password');
    if (!email || !password) return sendError(reply, 400, 'email and password are required');

    const result = await auth.credentials.signIn(email, password);
    if (!result.ok) {
      if (result.reason === 'throttled') {
        return sendError(reply.header('retry-after', result.retryAfterSeconds), 429, TOO_MANY_REQUESTS);
      }
      return sendError(reply, 401, INVALID_CREDENTIALS);
    }
    const tokens = await auth.startSession(result.user);
    auth.cookies.setSession(reply, tokens);
    const { id, name, email: userEmail, role } = result.user;
    return reply.send({ user: { id, name, email: userEmail, role }, accessToken: tokens.accessToken, expiresAt: tokens.expiresAt });
  });

  app.post('/api/auth/callback/credentials', async (request, reply) => {
    if (!isForm(request) && !isJson(request)) return unsupportedMediaType(reply, 'application/x-www-form-urlencoded');
    const body = bodyOf(request);
    if (!auth.checkCsrf(request, field(body, 'csrfToken'))) return sendError(reply, 403, 'Invalid CSRF token');
    const callbackUrl = auth.callbackUrl(field(body, 'callbackUrl'));
    const email = field(body, 'email');
    const password = field(body, 'password');
    // Back to the sign-in page; the typed email rides along in a one-minute cookie
    // scoped to /login, never in the URL (history, logs, Referer).
    const failed = (error: string) => {
      if (email && email.length <= MAX_KEPT_EMAIL) auth.cookies.setLoginEmail(reply, email);
      return reply.redirect(loginWithError(error, callbackUrl), 302);
    };
    if (!email || !password) return failed('CredentialsSignin');

    const result = await auth.credentials.signIn(email, password);
    if (!result.ok) return failed(result.reason === 'throttled' ? 'TooManyRequests' : 'CredentialsSignin');
    auth.cookies.setSession(reply, await auth.startSession(result.user));
    auth.cookies.clearLoginEmail(reply);
    return reply.redirect(callbackUrl, 302);
  });
}
