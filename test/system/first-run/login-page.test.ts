import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, login } from '../../auth/helpers.js';
import { startServer, type TestServer } from '../../helpers/server.js';

/**
 * /login outside production lists the demo accounts (README "Quick start"): each one
 * that exists, with its role as it is now and the shared password, and each listed
 * account signs in with that password. Never in production, never with
 * SEED_DEMO_DATA=never.
 */

/** The demo section of a /login page: [email, role] in order, and the password it names. */
function demoSection(page: string): { accounts: [string, string][]; password?: string } | undefined {
  const section = /<section class="demo"[\s\S]*?<\/section>/.exec(page)?.[0];
  if (!section) return undefined;
  const accounts = [...section.matchAll(/<li><code>([^<]+)<\/code> <span class="badge \w+">(\w+)<\/span><\/li>/g)].map(
    (m) => [m[1], m[2]] as [string, string],
  );
  return { accounts, password: /the password <code>([^<]+)<\/code>/.exec(section)?.[1] };
}

const loginPage = async (server: TestServer) => {
  const response = await fetch(`${server.url}/login`);
  expect(response.status).toBe(200);
  return response.text();
};

describe('outside production, on the demo data', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ SEED_DEMO_DATA: 'auto' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('lists every demo account with its role and the password', async () => {
    expect(demoSection(await loginPage(server))).toEqual({
      accounts: [
        ['admin@inkwell.test', 'admin'],
        ['editor@inkwell.test', 'editor'],
        ['editor2@inkwell.test', 'editor'],
        ['alice@inkwell.test', 'user'],
        ['bob@inkwell.test', 'user'],
        ['carol@inkwell.test', 'user'],
        ['dave@inkwell.test', 'user'],
      ],
      password: 'inkwell-demo',
    });
  });

  it('each listed account signs in with the listed password, with the listed role', async () => {
    const { accounts, password } = demoSection(await loginPage(server))!;
    for (const [email, role] of accounts) {
      const session = await login(server.url, email, password);
      const me = await server.gql('{ me { email role } }', undefined, { headers: bearer(session.accessToken) });
      expect(me.body.data).toEqual({ me: { email, role } });
    }
  });

  it('shows roles as they are now, and leaves out an account that is gone', async () => {
    await server.inkwell.services.users.setRole('bob@inkwell.test', 'editor');
    const admin = await login(server.url, 'admin@inkwell.test', 'inkwell-demo');
    const dave = await server.gql('{ users(limit: 100) { id email } }', undefined, { headers: bearer(admin.accessToken) });
    const daveId = dave.body.data.users.find((u: { email: string }) => u.email === 'dave@inkwell.test').id;
    const deleted = await server.gql('mutation ($id: ID!) { deleteUser(id: $id) }', { id: daveId }, { headers: bearer(admin.accessToken) });
    expect(deleted.body.data).toEqual({ deleteUser: true });

    const { accounts } = demoSection(await loginPage(server))!;
    expect(accounts).toContainEqual(['bob@inkwell.test', 'editor']);
    expect(accounts.map(([email]) => email)).not.toContain('dave@inkwell.test');
    expect(accounts).toHaveLength(6);
  });
});

describe.each([
  ['with SEED_DEMO_DATA=never', { SEED_DEMO_DATA: 'never' }],
  ['in production', { NODE_ENV: 'production', SEED_DEMO_DATA: 'auto', BCRYPT_COST: '10' }],
])('%s', (_name, env) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(env);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('the sign-in page lists no demo account and names no password', async () => {
    const page = await loginPage(server);
    expect(page).toContain('action="/api/auth/callback/credentials"'); // the page itself is there
    expect(demoSection(page)).toBeUndefined();
    expect(page).not.toContain('inkwell-demo');
    expect(page).not.toContain('@inkwell.test');
  });
});
