import type { FastifyInstance } from 'fastify';
import type { AuthService } from '../service.js';
import { html } from './html.js';
import type { PageKit } from './kit.js';
import { layout } from './layout.js';

/**
 * `GET /`: where a visitor starts — links to the pages, and outside production to
 * GraphiQL at /graphql (which production does not serve).
 */
export async function homePage(app: FastifyInstance, auth: AuthService, kit: PageKit): Promise<void> {
  app.get('/', async (request, reply) => {
    const identity = await kit.visitor(request, reply);
    const user = identity.session?.user;
    const graphiql = !auth.config.isProduction;
    const content = html`<section class="card">
<h1>Inkwell</h1>
<p class="lead">${user ? html`Signed in as ${user.name}.` : 'A GraphQL API for posts, books and reactions, with accounts.'}</p>
<ul class="links">
${user ? '' : html`<li><a href="/login">Sign in</a></li>
<li><a href="/register">Create an account</a></li>`}
<li><a href="/account">Your account</a></li>
<li><a href="/admin">Users and roles</a> <span class="hint">(admins)</span></li>
${graphiql ? html`<li><a href="/graphql">GraphiQL</a> <span class="hint">(explore the API; not served in production)</span></li>` : ''}
</ul>
</section>`;
    return kit.send(reply, layout('Home', content, kit.pageUser(identity)));
  });
}
