import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { can } from '../../domain/caller.js';
import type { Identity } from '../caller.js';
import type { AuthService } from '../service.js';
import { html, type SafeHtml } from './html.js';
import { layout, roleBadge, type PageUser } from './layout.js';
import { STYLESHEET, STYLESHEET_PATH } from './style.js';

/**
 * The server-rendered pages (SPEC section 6), usable without JavaScript: /login,
 * /account (a session), /admin (admins), /unauthorized. A page that needs a session
 * sends an anonymous caller to `/login?callbackUrl=<the page>`; a non-admin on /admin
 * goes to /unauthorized. Every value that reaches the HTML goes through `html`.
 */

const ERROR_MESSAGES: Record<string, string> = {
  CredentialsSignin: 'That email and password did not match an account. Please try again.',
  TooManyRequests: 'Too many failed sign-in attempts for this account. Please wait a few minutes and try again.',
  OAuthSignin: 'Signing in with that provider could not be started. Please try again later.',
  OAuthCallback: 'Signing in with the provider did not complete. Please try again.',
  OAuthAccountNotLinked: 'An account with this email already exists. Sign in with your password to use it.',
  AccessDenied: 'The provider did not allow the sign-in.',
};

export async function pageRoutes(app: FastifyInstance, auth: AuthService): Promise<void> {
  const send = (reply: FastifyReply, page: SafeHtml, status = 200) =>
    reply.code(status).header('cache-control', 'no-store').type('text/html; charset=utf-8').send(page.value);

  const pageUser = (identity: Identity): PageUser | undefined =>
    identity.session ? { name: identity.session.user.name, isAdmin: can(identity.caller, 'manage:users') } : undefined;

  const toLogin = (request: FastifyRequest, reply: FastifyReply) =>
    reply.redirect(`/login?${new URLSearchParams({ callbackUrl: request.url }).toString()}`, 302);

  app.get(STYLESHEET_PATH, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(STYLESHEET),
  );

  app.get<{ Querystring: Record<string, unknown> }>('/login', async (request, reply) => {
    const callbackUrl = auth.callbackUrl(request.query.callbackUrl, '/account');
    const identity = await auth.callers.identify(request);
    if (identity.session) return reply.redirect(callbackUrl, 302);

    const csrfToken = auth.csrfToken(request, reply);
    const code = typeof request.query.error === 'string' ? request.query.error : undefined;
    const message = code ? (ERROR_MESSAGES[code] ?? 'Sign-in failed. Please try again.') : undefined;
    const hidden = html`<input type="hidden" name="csrfToken" value="${csrfToken}"><input type="hidden" name="callbackUrl" value="${callbackUrl}">`;
    const providers = [...auth.providers.values()].map(
      (p) => html`<form method="post" action="/api/auth/signin/${p.id}">${hidden}<button class="secondary" type="submit">Continue with ${p.name}</button></form>`,
    );
    const content = html`<section class="card">
<h1>Sign in</h1>
<p class="lead">Welcome back to Inkwell.</p>
${message ? html`<p class="alert" role="alert">${message}</p>` : ''}
<form method="post" action="/api/auth/callback/credentials">
${hidden}
<label>Email <input type="email" name="email" autocomplete="username" required autofocus></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>
${providers.length > 0 ? html`<div class="divider">or</div><div class="providers">${providers}</div>` : ''}
</section>`;
    return send(reply, layout('Sign in', content));
  });

  app.get('/account', async (request, reply) => {
    const identity = await auth.callers.identify(request);
    if (!identity.session) return toLogin(request, reply);
    const { user, expiresAt } = identity.session;
    const csrfToken = auth.csrfToken(request, reply);
    const content = html`<section class="card">
<h1>Your account</h1>
<p class="lead">Signed in as ${user.name}.</p>
<dl>
<dt>Name</dt><dd>${user.name}</dd>
<dt>Email</dt><dd>${user.email ?? '—'}</dd>
<dt>Role</dt><dd>${roleBadge(user.role)}</dd>
<dt>Session ends</dt><dd><time datetime="${expiresAt}">${expiresAt.slice(0, 16).replace('T', ' ')} UTC</time></dd>
</dl>
<div class="actions">
<form method="post" action="/api/auth/signout"><input type="hidden" name="csrfToken" value="${csrfToken}"><input type="hidden" name="callbackUrl" value="/login"><button type="submit">Sign out</button></form>
${can(identity.caller, 'manage:users') ? html`<a href="/admin">Manage users</a>` : ''}
</div>
</section>`;
    return send(reply, layout('Your account', content, pageUser(identity)));
  });

  app.get('/admin', async (request, reply) => {
    const identity = await auth.callers.identify(request);
    if (!identity.session) return toLogin(request, reply);
    if (!can(identity.caller, 'manage:users')) return reply.redirect('/unauthorized', 302);
    const users = await auth.services.users.list(identity.caller, { limit: 100, offset: 0 });
    const rows = users.map(
      (u) => html`<tr><td>${u.name}</td><td>${u.email ?? '—'}</td><td>${roleBadge(u.role)}</td><td>${u.createdAt.slice(0, 10)}</td></tr>`,
    );
    const content = html`<section class="card wide">
<h1>Users</h1>
<p class="lead">The newest ${users.length} accounts and their roles. Roles change with <code>npm run user:role</code> or the <code>updateUser</code> mutation.</p>
<table>
<thead><tr><th>Name</th><th>Email</th><th>Role</th><th>Joined</th></tr></thead>
<tbody>${rows}</tbody>
</table>
</section>`;
    return send(reply, layout('Users', content, pageUser(identity)));
  });

  app.get('/unauthorized', async (request, reply) => {
    const identity = await auth.callers.identify(request);
    const content = html`<section class="card">
<h1>Not allowed</h1>
<p class="lead">Your account does not have access to that page.</p>
<div class="actions">${identity.session ? html`<a href="/account">Back to your account</a>` : html`<a href="/login">Sign in</a>`}</div>
</section>`;
    return send(reply, layout('Not allowed', content, pageUser(identity)), 403);
  });
}
