import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumInstalled, launchChromium } from '../helpers/browser.js';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.js';
import { testBackend, type TestServer } from '../helpers/server.js';
import { PASSWORD, freePort, register, startServerAt, uniqueEmail } from './helpers.js';

// The pages in a real browser (Debian's Chromium through playwright-core): the sign-in
// form, /account, /admin for admins only, sign-out, and external sign-in through the
// provider button — with the real Content-Security-Policy in force.
// CI installs Chromium (.ci/run); elsewhere the file is skipped when it is missing.

const run = testBackend === 'sqlite' && (chromiumInstalled() || Boolean(process.env.CI));

describe.runIf(run)('the pages in Chromium', () => {
  let browser: Browser;
  let s: TestServer;
  let idp: TestIdp;
  const user = { email: uniqueEmail('reader'), name: 'Rita Reader' };
  const admin = { email: uniqueEmail('boss'), name: 'Ada Admin' };

  beforeAll(async () => {
    const port = await freePort();
    idp = await startTestIdp({ redirectUris: [`http://127.0.0.1:${port}/api/auth/callback/testidp`] });
    s = await startServerAt({ OAUTH_TESTIDP_ISSUER: idp.issuer, OAUTH_TESTIDP_CLIENT_ID: idp.clientId, OAUTH_TESTIDP_CLIENT_SECRET: idp.clientSecret }, port);
    await register(s.url, user.email, PASSWORD, user.name);
    await register(s.url, admin.email, PASSWORD, admin.name);
    await s.inkwell.services.users.setRole(admin.email, 'admin');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await idp?.close();
  });

  /** A fresh browser profile that records CSP violations ("Refused to …") and script errors. */
  async function newPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && /Refused to|Content Security Policy/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    return { context, page, problems };
  }

  async function signIn(page: Page, email: string, password = PASSWORD) {
    await page.fill('input[name=email]', email);
    await page.fill('input[name=password]', password);
    await Promise.all([page.waitForNavigation(), page.click('form[action="/api/auth/callback/credentials"] button[type=submit]')]);
  }

  it('sign in through the form, reach /account, be refused /admin, sign out', async () => {
    const { context, page, problems } = await newPage();

    await page.goto(`${s.url}/account`);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect(new URL(page.url()).searchParams.get('callbackUrl')).toBe('/account');
    // The stylesheet applied under the CSP (no inline styles anywhere).
    expect(await page.evaluate('getComputedStyle(document.body).backgroundColor')).toBe('rgb(244, 245, 249)');

    await signIn(page, user.email, 'not the password');
    expect(new URL(page.url()).searchParams.get('error')).toBe('CredentialsSignin');
    expect(await page.textContent('[role=alert]')).toContain('did not match');

    await signIn(page, user.email);
    expect(new URL(page.url()).pathname).toBe('/account');
    expect(await page.textContent('main')).toContain(user.name);
    expect(await page.textContent('main')).toContain(user.email);

    const cookies = await context.cookies(s.url);
    const auth = cookies.find((c) => c.name === 'auth-token');
    expect(auth).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    expect(cookies.find((c) => c.name === 'refresh-token')).toBeUndefined(); // Path=/api/auth/refresh
    expect((await context.cookies(`${s.url}/api/auth/refresh`)).find((c) => c.name === 'refresh-token')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    // Scripts cannot read any of them.
    expect(await page.evaluate('document.cookie')).toBe('');

    await page.goto(`${s.url}/admin`);
    expect(new URL(page.url()).pathname).toBe('/unauthorized');
    expect(await page.textContent('h1')).toBe('Not allowed');

    await page.goto(`${s.url}/account`);
    await Promise.all([page.waitForNavigation(), page.click('text=Sign out')]);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.goto(`${s.url}/account`);
    expect(new URL(page.url()).pathname).toBe('/login');

    expect(problems).toEqual([]);
    await context.close();
  });

  it('an admin sees the user list with roles', async () => {
    const { context, page, problems } = await newPage();
    await page.goto(`${s.url}/admin`);
    expect(new URL(page.url()).searchParams.get('callbackUrl')).toBe('/admin');
    await signIn(page, admin.email);
    expect(new URL(page.url()).pathname).toBe('/admin');
    const rows = await page.$$eval('tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim())));
    expect(rows).toEqual(expect.arrayContaining([expect.arrayContaining([user.name, user.email, 'user']), expect.arrayContaining([admin.name, admin.email, 'admin'])]));
    expect(problems).toEqual([]);
    await context.close();
  });

  it('signs in with the external provider through its button (form-action allows the provider)', async () => {
    idp.setAccount('browser-acct', { email: uniqueEmail('browser'), emailVerified: true, name: 'Browser Person' });
    idp.loginAs('browser-acct');
    const { context, page, problems } = await newPage();
    await page.goto(`${s.url}/login?callbackUrl=%2Faccount`);
    await Promise.all([page.waitForURL(`${s.url}/account`), page.click('text=Continue with Testidp')]);
    expect(await page.textContent('main')).toContain('Browser Person');
    expect(problems).toEqual([]);
    await context.close();
  });
});
