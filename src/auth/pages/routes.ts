import type { FastifyInstance } from 'fastify';
import { can } from '../../domain/caller.js';
import type { AuthService } from '../service.js';
import { homePage } from './home.js';
import { html } from './html.js';
import { pageKit } from './kit.js';
import { layout, roleBadge } from './layout.js';
import { signInPages } from './sign-in.js';
import { STYLESHEET, STYLESHEET_PATH } from './style.js';

/**
 * The server-rendered pages (README "Accounts and sign-in"), usable without JavaScript:
 * / (links), /login and /register (./sign-in.ts), /account (a session), /admin (admins),
 * /unauthorized. A page that needs a session sends an anonymous caller to
 * `/login?callbackUrl=<the page>`; a non-admin on /admin goes to /unauthorized. Every
 * value that reaches the HTML goes through `html`.
 */
export async function pageRoutes(app: FastifyInstance, auth: AuthService): Promise<void> {
  const kit = pageKit(auth);

  app.get(STYLESHEET_PATH, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=3600').type('text/css; charset=utf-8').send(STYLESHEET),
  );

  await homePage(app, auth, kit);
  await signInPages(app, auth, kit);

  app.get('/account', async (request, reply) => {
    const identity = await kit.visitor(request, reply);
    if (!identity.session) return kit.toLogin(request, reply);
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
    return kit.send(reply, layout('Your account', content, kit.pageUser(identity)));
  });

  app.get('/admin', async (request, reply) => {
    const identity = await kit.visitor(request, reply);
    if (!identity.session) return kit.toLogin(request, reply);
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
    return kit.send(reply, layout('Users', content, kit.pageUser(identity)));
  });

  app.get('/unauthorized', async (request, reply) => {
    const identity = await kit.visitor(request, reply);
    const content = html`<section class="card">
<h1>Not allowed</h1>
<p class="lead">Your account does not have access to that page.</p>
<div class="actions">${identity.session ? html`<a href="/account">Back to your account</a>` : html`<a href="/login">Sign in</a>`}</div>
</section>`;
    return kit.send(reply, layout('Not allowed', content, kit.pageUser(identity)), 403);
  });
}
