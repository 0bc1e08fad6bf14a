import { DEMO_ACCOUNTS, DEMO_PASSWORD } from '../../domain/seed.js';
import type { AuthService } from '../service.js';
import { html, type SafeHtml } from './html.js';
import { roleBadge } from './layout.js';

/**
 * Outside production, where an empty database is seeded with demo data (README "Quick
 * start"), /login lists the demo accounts, so that a first visit can sign in at once:
 * those that exist, with their role as it is now, and the password they share. Nothing
 * in production or with SEED_DEMO_DATA=never, and nothing when the database was not
 * seeded by us (its accounts are not ours to list).
 */
export async function demoAccounts(auth: AuthService): Promise<SafeHtml | undefined> {
  if (!auth.config.seedDemoData) return undefined;
  const found = await Promise.all(DEMO_ACCOUNTS.map((account) => auth.services.users.findByEmail(account.email)));
  const present = found.filter((user) => user !== undefined);
  if (present.length === 0) return undefined;
  const rows = present.map((user) => html`<li><code>${user.email}</code> ${roleBadge(user.role)}</li>`);
  return html`<section class="demo" aria-labelledby="demo-accounts">
<h2 id="demo-accounts">Demo accounts</h2>
<p class="hint">Seeded outside production. Each has the password <code>${DEMO_PASSWORD}</code>.</p>
<ul>${rows}</ul>
</section>`;
}
