import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import fastifyHelmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Backends } from '../backends.js';
import type { Config } from '../config.js';
import type { Services } from '../domain/services.js';
import type { Identity } from './caller.js';
import { pageRoutes } from './pages/routes.js';
import { clientKey, createLimiter, registerRateLimit, TOO_MANY_REQUESTS } from '../rate-limit/limiter.js';
import { credentialRoutes } from './routes/credentials.js';
import { sendError } from './routes/http.js';
import { oauthRoutes } from './routes/oauth.js';
import { sessionRoutes } from './routes/session.js';
import { AuthService } from './service.js';

/**
 * The account area, wired into the app: cookies and rate limiting at the root (the
 * GraphQL adapter needs both), the /api/auth endpoints, /api/me and the pages in their
 * own encapsulated context (security headers, form bodies, `{error}` answers), and
 * `identify` and `refuseCredential`, which the GraphQL adapter calls.
 */

export interface AuthSetup {
  auth: AuthService;
  /** Who sent a request (memoised per request): the caller, and whether a credential was refused. */
  identify(request: FastifyRequest): Promise<Identity>;
  /** Starts the 401 for a refused credential: status, `WWW-Authenticate`, the cookie cleared. */
  refuseCredential(reply: FastifyReply, identity: Identity): FastifyReply;
}

const BODY_LIMIT = 16 * 1024;

export async function setupAuth(app: FastifyInstance, deps: { config: Config; backends: Backends; services: Services }): Promise<AuthSetup> {
  const { config } = deps;
  const auth = new AuthService(config, deps.backends, deps.services, (err) =>
    app.log.warn({ err }, 'shared sign-in throttle failed; counting on this instance'),
  );
  // The password-hashing threads stop with the app (after in-flight requests finish).
  app.addHook('onClose', async () => {
    await auth.hasher.close();
  });

  await app.register(fastifyCookie);
  // Set by auth.callers.identify, once per request (./caller.ts).
  app.decorateRequest('identity', null);
  await registerRateLimit(app, auth.requestLimit);
  const clientOf = async (request: FastifyRequest) => clientKey(await auth.callers.caller(request), request.ip);
  const limiter = (group: string) =>
    createLimiter(app, { group, max: config.rateLimit.max, windowMs: config.rateLimit.windowMs, clientKey: clientOf });
  const limits = { auth: limiter('auth'), pages: limiter('pages') };

  await app.register(async (area) => {
    const formActions = new Set(["'self'"]);
    for (const provider of auth.providers.values()) for (const origin of provider.origins) formActions.add(origin);
    await area.register(fastifyHelmet, {
      // No inline style or script anywhere: the stylesheet is served from our origin.
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'", 'data:'],
          // Chromium applies form-action to the redirects after a submission too: the
          // provider buttons post here and are redirected to the provider.
          formAction: [...formActions],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
        },
      },
      strictTransportSecurity: config.isProduction ? { maxAge: 31_536_000, includeSubDomains: true } : false,
      referrerPolicy: { policy: 'no-referrer' },
    });
    await area.register(fastifyFormbody, { bodyLimit: BODY_LIMIT });
    area.removeContentTypeParser(['application/json', 'text/plain']);
    area.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (_request, body, done) => {
      const text = String(body);
      if (text.trim() === '') return done(null, {});
      try {
        done(null, JSON.parse(text));
      } catch {
        done(Object.assign(new Error('Body is not valid JSON'), { statusCode: 400 }), undefined);
      }
    });

    area.addHook('onRequest', async (request, reply) => {
      const path = request.url.split('?', 1)[0] ?? '';
      const decision = await (path.startsWith('/api/') ? limits.auth : limits.pages)(request, reply);
      if (!decision.allowed) return sendError(reply, 429, TOO_MANY_REQUESTS);
    });
    area.addHook('onSend', async (request, reply) => {
      // Tokens and session state must never be cached by a browser or a proxy.
      if (request.url.startsWith('/api/')) reply.header('cache-control', 'private, no-store');
    });

    area.setErrorHandler((error: { statusCode?: number; message?: string }, request, reply) => {
      const status = error.statusCode ?? 500;
      if (status === 415) return sendError(reply, 415, 'Unsupported Content-Type');
      if (status === 413) return sendError(reply, 413, 'Request body too large');
      if (status >= 400 && status < 500) return sendError(reply, status, status === 400 ? 'Bad request' : 'Request refused');
      request.log.error({ err: error }, 'unexpected error in the account area');
      return sendError(reply, 500, 'Internal server error');
    });
    await area.register(
      async (api) => {
        api.setNotFoundHandler((_request, reply) => sendError(reply, 404, 'Not found'));
      },
      { prefix: '/api/auth' },
    );

    await credentialRoutes(area, auth);
    await sessionRoutes(area, auth);
    await oauthRoutes(area, auth);
    await pageRoutes(area, auth);
  });

  return {
    auth,
    identify: (request) => auth.callers.identify(request),
    refuseCredential: (reply, identity) => auth.refuseCredential(reply, identity),
  };
}
