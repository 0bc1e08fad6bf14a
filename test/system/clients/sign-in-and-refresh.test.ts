import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD, register, uniqueEmail } from '../../auth/helpers.js';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../../helpers/browser.js';
import { startServer, type TestServer } from '../../helpers/server.js';
import { scratchDir } from '../ops/helpers.js';
import { live, snippet } from './readme.js';
import { recordRequests, sessionIdOf, signedIn } from './session.js';

/*
 * The README's `session` snippet (`signIn` and `refresh`, README "Expired and revoked
 * tokens in clients"), read from README.md, in both places it says it works: in Node,
 * whose fetch keeps no cookies, so the snippet keeps the refresh-token cookie itself; and
 * in a browser (Chromium), which keeps the cookie and hides Set-Cookie from the page, so
 * the snippet's cookie lines do nothing there.
 */

let server: TestServer;
let requests: ReturnType<typeof recordRequests>;
let dir: string;

beforeAll(async () => {
  server = await startServer();
  requests = recordRequests(server);
  dir = scratchDir('readme-session');
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const me = async (token: string) => (await server.gql('{ me { email } }', undefined, { headers: { authorization: `Bearer ${token}` } })).body.data;

describe('in Node', () => {
  it('signIn keeps the refresh-token cookie; refresh trades it for an access token and the rotated cookie', async () => {
    const { app, email } = await signedIn(server, dir);
    const first = app.state.refreshCookie;
    expect(first).toMatch(/^refresh-token=[\w-]{20,}$/);
    requests.clear();

    // (An access token minted in the same second for the same session may equal the last.)
    const token = await app.refresh();

    expect(requests.list()).toEqual(['POST /api/auth/refresh 200']);
    expect(token).toBe(app.state.accessToken);
    expect(app.state.refreshCookie).toMatch(/^refresh-token=[\w-]{20,}$/);
    expect(app.state.refreshCookie).not.toBe(first);
    expect(await me(token)).toEqual({ me: { email } });
    // And again with the rotated cookie: sending the first one again would be a reuse.
    expect(await me(await app.refresh())).toEqual({ me: { email } });
    expect(requests.list()).toEqual(['POST /api/auth/refresh 200', 'POST /graphql 200', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
  });

  it('refreshes that start together share one request', async () => {
    const { app } = await signedIn(server, dir);
    requests.clear();

    const tokens = await Promise.all([app.refresh(), app.refresh(), app.refresh()]);

    expect(new Set(tokens).size).toBe(1);
    expect(requests.list()).toEqual(['POST /api/auth/refresh 200']);
  });

  it('a session that has ended: refresh rejects with "session ended"', async () => {
    const { app } = await signedIn(server, dir);
    await server.inkwell.auth.sessions.revoke(sessionIdOf(app.state.accessToken));

    await expect(app.refresh()).rejects.toThrow('session ended');
  });

  it('a wrong password: signIn rejects and keeps nothing', async () => {
    const { app, email } = await signedIn(server, dir);
    const before = app.state.accessToken;

    await expect(app.signIn(email, 'not the password')).rejects.toThrow('sign-in refused (401)');
    expect(app.state.accessToken).toBe(before);
  });
});

describe.runIf(chromiumInstalled() || Boolean(process.env.CI))('in Chromium, on a page of the API origin', () => {
  let browser: ChromiumSession;
  beforeAll(async () => {
    browser = await openChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('the browser keeps the cookie: signIn and refresh work, and the cookie lines do nothing', async () => {
    const email = uniqueEmail('browser-session');
    await register(server.url, email, PASSWORD, 'Browser Session');
    // The snippet is added as a script of the page, which the pages' CSP (scripts of
    // our origin only) would refuse: a page of the app would load it from a file.
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(`${server.url}/login`);
    await page.addScriptTag({ content: live(snippet('session').code, server.url) });
    requests.clear();

    const outcome = (await page.evaluate(`(async () => {
      await signIn(${JSON.stringify(email)}, ${JSON.stringify(PASSWORD)});
      const signedIn = typeof accessToken === 'string';
      const [a, b] = await Promise.all([refresh(), refresh()]);
      const me = await fetch(API + '/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer ' + a },
        body: JSON.stringify({ query: '{ me { email } }' }),
      }).then((response) => response.json());
      return { signedIn, shared: a === b, me: me.data, refreshCookie: refreshCookie ?? null, pageCookies: document.cookie };
    })()`)) as { signedIn: boolean; shared: boolean; me: unknown; refreshCookie: string | null; pageCookies: string };

    expect(outcome).toEqual({ signedIn: true, shared: true, me: { me: { email } }, refreshCookie: null, pageCookies: '' });
    expect(requests.list()).toEqual(['POST /api/auth/login 200', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
    // The cookie the browser keeps and sends: HttpOnly, so not the page's to read.
    const kept = (await context.cookies()).filter((c) => c.name === 'refresh-token');
    expect(kept.map((c) => [c.path, c.httpOnly])).toEqual([['/api/auth', true]]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
