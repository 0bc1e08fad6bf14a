import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../helpers/browser.js';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.js';
import { testBackend, type TestServer } from '../helpers/server.js';
import { PASSWORD, cookies as cookieHeader, freePort, register, startServerAt, uniqueEmail } from './helpers.js';

// The pages in a real browser (Debian's Chromium through playwright-core): the home
// page's links, sign-up, the sign-in form (keeping the email after a failure),
// /account, /admin for admins only, sign-out (also once the auth-token cookie is gone),
// the refresh cookie's move from its old path, and external sign-in through the
// provider button — with the real Content-Security-Policy in force.
// CI installs Chromium (.ci/run); elsewhere the file is skipped when it is missing.

const run = testBackend === 'sqlite' && (chromiumInstalled() || Boolean(process.env.CI));

describe.runIf(run)('the pages in Chromium', () => {
  let browser: ChromiumSession;
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
    browser = await openChromium();
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
    // The typed email is kept (never the password), and it is not in the address.
    expect(await page.inputValue('input[name=email]')).toBe(user.email);
    expect(await page.inputValue('input[name=password]')).toBe('');
    expect(page.url()).not.toContain(encodeURIComponent(user.email));

    await signIn(page, user.email);
    expect(new URL(page.url()).pathname).toBe('/account');
    expect(await page.textContent('main')).toContain(user.name);
    expect(await page.textContent('main')).toContain(user.email);

    const cookies = await context.cookies(s.url);
    const auth = cookies.find((c) => c.name === 'auth-token');
    expect(auth).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/' });
    // Path=/api/auth: sent to refresh and sign-out, never to /graphql or the pages.
    expect(cookies.find((c) => c.name === 'refresh-token')).toBeUndefined();
    expect((await context.cookies(`${s.url}/graphql`)).find((c) => c.name === 'refresh-token')).toBeUndefined();
    for (const path of ['/api/auth/refresh', '/api/auth/signout']) {
      expect((await context.cookies(`${s.url}${path}`)).find((c) => c.name === 'refresh-token')).toMatchObject({ path: '/api/auth', httpOnly: true, sameSite: 'Strict' });
    }
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

  it('the home page links to every page, and GraphiQL', async () => {
    const { context, page, problems } = await newPage();
    const landings: [string, string][] = [
      ['Sign in', '/login'],
      ['Create an account', '/register'],
      ['Your account', '/login?callbackUrl=%2Faccount'],
      ['Users and roles', '/login?callbackUrl=%2Fadmin'],
    ];
    for (const [text, landing] of landings) {
      await page.goto(`${s.url}/`);
      await Promise.all([page.waitForNavigation(), page.click(`main a:text-is("${text}")`)]);
      const url = new URL(page.url());
      expect(`${url.pathname}${url.search}`).toBe(landing);
    }
    expect(problems).toEqual([]);

    // GraphiQL is another page with its own policy: only check that the link leads there.
    await page.goto(`${s.url}/`);
    const [response] = await Promise.all([page.waitForNavigation(), page.click('main a:text-is("GraphiQL")')]);
    expect(new URL(page.url()).pathname).toBe('/graphql');
    expect(response?.status()).toBe(200);
    expect(await response?.headerValue('content-type')).toMatch(/^text\/html/);
    await context.close();
  });

  it('signs up through /register and lands on /account signed in; a taken email keeps what was typed', async () => {
    const { context, page, problems } = await newPage();
    const newcomer = { name: 'Nina Newcomer', email: uniqueEmail('newcomer') };
    await page.goto(`${s.url}/login`);
    await Promise.all([page.waitForNavigation(), page.click('main a:text-is("Create an account")')]);
    expect(new URL(page.url()).pathname).toBe('/register');

    await page.fill('input[name=name]', newcomer.name);
    await page.fill('input[name=email]', newcomer.email);
    await page.fill('input[name=password]', PASSWORD);
    await Promise.all([page.waitForNavigation(), page.click('form[action="/register"] button[type=submit]')]);
    expect(new URL(page.url()).pathname).toBe('/account');
    expect(await page.textContent('main')).toContain(newcomer.name);
    expect(await page.textContent('main')).toContain(newcomer.email);
    expect((await context.cookies(s.url)).find((c) => c.name === 'auth-token')).toMatchObject({ httpOnly: true, path: '/' });

    // Another browser tries the same address.
    const second = await newPage();
    await second.page.goto(`${s.url}/register`);
    await second.page.fill('input[name=name]', 'Someone Else');
    await second.page.fill('input[name=email]', newcomer.email);
    await second.page.fill('input[name=password]', PASSWORD);
    await Promise.all([second.page.waitForNavigation(), second.page.click('form[action="/register"] button[type=submit]')]);
    expect(await second.page.textContent('[role=alert]')).toContain('already exists');
    expect(await second.page.inputValue('input[name=name]')).toBe('Someone Else');
    expect(await second.page.inputValue('input[name=email]')).toBe(newcomer.email);
    expect(await second.page.inputValue('input[name=password]')).toBe('');
    expect((await second.context.cookies(s.url)).find((c) => c.name === 'auth-token')).toBeUndefined();

    expect([...problems, ...second.problems]).toEqual([]);
    await second.context.close();
    await context.close();
  });

  it('signing out after the auth-token cookie expired still ends the session', async () => {
    const { context, page, problems } = await newPage();
    await page.goto(`${s.url}/login`);
    await signIn(page, user.email);
    expect(new URL(page.url()).pathname).toBe('/account');
    const refreshToken = (await context.cookies(`${s.url}/api/auth/signout`)).find((c) => c.name === 'refresh-token')!.value;

    // Fifteen minutes later the browser has dropped the access-token cookie; the page is still open.
    await context.clearCookies({ name: 'auth-token' });
    await Promise.all([page.waitForNavigation(), page.click('text=Sign out')]);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect((await context.cookies(`${s.url}/api/auth/refresh`)).find((c) => c.name === 'refresh-token')).toBeUndefined();

    const refreshed = await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookieHeader(`refresh-token=${refreshToken}`) });
    expect(refreshed.status).toBe(401);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a browser holding a refresh cookie at the old path refreshes, and that cookie is deleted', async () => {
    const { context, page } = await newPage();
    await page.goto(`${s.url}/login`);
    await signIn(page, user.email);
    const host = new URL(s.url).hostname;
    // What an earlier release left behind: a cookie at /api/auth/refresh (here of a session since ended).
    await context.addCookies([{ name: 'refresh-token', value: 'A'.repeat(43), domain: host, path: '/api/auth/refresh', httpOnly: true, sameSite: 'Strict' }]);
    expect((await context.cookies(`${s.url}/api/auth/refresh`)).filter((c) => c.name === 'refresh-token')).toHaveLength(2);

    // A same-origin document without the pages' policy, so a script may call the API as an SPA would.
    await page.route(`${s.url}/spa`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>spa</title>' }));
    await page.goto(`${s.url}/spa`);
    const status = await page.evaluate(async () => (await fetch('/api/auth/refresh', { method: 'POST', credentials: 'same-origin' })).status);
    expect(status).toBe(200);
    const left = (await context.cookies(`${s.url}/api/auth/refresh`)).filter((c) => c.name === 'refresh-token');
    expect(left.map((c) => c.path)).toEqual(['/api/auth']);
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
