import type { FastifyInstance } from 'fastify';
import { OAUTH_FLOW_COOKIE } from '../cookies.js';
import type { AuthService } from '../service.js';
import { bodyOf, field, isForm, loginWithError, rawQuery, sendError, unsupportedMediaType } from './http.js';

/**
 * External sign-in: `POST /api/auth/signin/<provider>` (a form with the CSRF token)
 * sends the browser to the provider; `GET /api/auth/callback/<provider>` comes back
 * with `code` and `state`, checked against the flow cookie set at the start.
 */
export async function oauthRoutes(app: FastifyInstance, auth: AuthService): Promise<void> {
  app.post<{ Params: { provider: string } }>('/api/auth/signin/:provider', async (request, reply) => {
    if (!isForm(request)) return unsupportedMediaType(reply, 'application/x-www-form-urlencoded');
    const body = bodyOf(request);
    if (!auth.checkCsrf(request, field(body, 'csrfToken'))) return sendError(reply, 403, 'Invalid CSRF token');
    const provider = auth.providers.get(request.params.provider);
    if (!provider) return sendError(reply, 404, 'Unknown provider');
    const callbackUrl = auth.callbackUrl(field(body, 'callbackUrl'));

    let started;
    try {
      started = await provider.start(auth.redirectUri(provider.id));
    } catch (err) {
      request.log.warn({ provider: provider.id, err: describe(err) }, 'could not start external sign-in');
      return reply.redirect(loginWithError('OAuthSignin', callbackUrl), 302);
    }
    const sealed = await auth.flows.seal({ ...started.flow, provider: provider.id, callbackUrl });
    auth.cookies.setOAuthFlow(reply, provider.id, sealed);
    return reply.redirect(started.url.href, 302);
  });

  app.get<{ Params: { provider: string }; Querystring: Record<string, string | string[] | undefined> }>(
    // The URL carries the authorization code: the request log serializer (src/auth/log.ts) redacts it.
    '/api/auth/callback/:provider',
    async (request, reply) => {
      const provider = auth.providers.get(request.params.provider);
      if (!provider) return sendError(reply, 404, 'Unknown provider');
      const flow = await auth.flows.open(request.cookies[OAUTH_FLOW_COOKIE], provider.id);
      // One flow, one callback: the cookie goes whatever happens next.
      auth.cookies.clearOAuthFlow(reply, provider.id);
      const fail = (error: string) => reply.redirect(loginWithError(error, flow?.callbackUrl ?? '/'), 302);

      const { state, error } = request.query;
      if (!flow || typeof state !== 'string' || state !== flow.state) return fail('OAuthCallback');
      if (error !== undefined) return fail(error === 'access_denied' ? 'AccessDenied' : 'OAuthCallback');

      let profile;
      try {
        // openid-client reads the response parameters from the URL it was sent to.
        const current = new URL(auth.redirectUri(provider.id));
        current.search = rawQuery(request);
        profile = await provider.finish(current, flow);
      } catch (err) {
        request.log.warn({ provider: provider.id, err: describe(err) }, 'external sign-in callback refused');
        return fail('OAuthCallback');
      }

      const outcome = await auth.external.signIn(profile);
      if (!outcome.ok) return fail('OAuthAccountNotLinked');
      auth.cookies.setSession(reply, await auth.startSession(outcome.user));
      return reply.redirect(flow.callbackUrl, 302);
    },
  );
}

/** An error's kind and message for the log; never the request, tokens or codes. */
function describe(err: unknown): { name?: string; code?: unknown; message: string } {
  if (err instanceof Error) return { name: err.name, code: (err as { code?: unknown }).code, message: err.message };
  return { message: String(err) };
}
