import type { FastifyReply, FastifyRequest } from 'fastify';
import { can } from '../../domain/caller.js';
import type { Identity } from '../caller.js';
import type { AuthService } from '../service.js';
import type { SafeHtml } from './html.js';
import type { PageUser } from './layout.js';

/**
 * What every page handler needs: sending HTML, the visitor, and the way to /login.
 * A page treats a refused `auth-token` cookie (expired, revoked…) as signed out and
 * clears it, so the browser stops sending it (README "Accounts and sign-in").
 */
export interface PageKit {
  send(reply: FastifyReply, page: SafeHtml, status?: number): FastifyReply;
  visitor(request: FastifyRequest, reply: FastifyReply): Promise<Identity>;
  pageUser(identity: Identity): PageUser | undefined;
  toLogin(request: FastifyRequest, reply: FastifyReply): FastifyReply;
}

/** The page a sign-in or registration sends to when it names none. */
export const DEFAULT_LANDING = '/account';

export function pageKit(auth: AuthService): PageKit {
  return {
    send: (reply, page, status = 200) => reply.code(status).header('cache-control', 'private, no-store').type('text/html; charset=utf-8').send(page.value),
    async visitor(request, reply) {
      const identity = await auth.callers.identify(request);
      if (identity.rejected && identity.source === 'cookie') auth.cookies.clearAccessToken(reply);
      return identity;
    },
    pageUser: (identity) => (identity.session ? { name: identity.session.user.name, isAdmin: can(identity.caller, 'manage:users') } : undefined),
    toLogin: (request, reply) => reply.redirect(`/login?${new URLSearchParams({ callbackUrl: request.url }).toString()}`, 302),
  };
}

/** A sign-in or registration page's address, carrying where to go afterwards unless that is the default. */
export function withCallback(path: string, callbackUrl: string): string {
  return callbackUrl === DEFAULT_LANDING ? path : `${path}?${new URLSearchParams({ callbackUrl }).toString()}`;
}
