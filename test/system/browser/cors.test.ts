import { createServer, type Server } from 'node:http';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../../helpers/browser.js';
import { startServerAt, testBackend, type TestServer } from '../../helpers/server.js';
import { PASSWORD, register, uniqueEmail } from '../../auth/helpers.js';

// A browser app on another origin, in real Chromium (README "Browser apps"). The service
// runs in production mode with CORS_ORIGINS naming one page origin; a second page origin
// is not listed. Both pages are on 127.0.0.1 (other ports): same-site, so the browser
// sends the SameSite=Lax cookie from either, yet cross-origin — only CORS tells them apart.
// CI installs Chromium (.ci/run); elsewhere the file is skipped when it is missing.

const run = testBackend === 'sqlite' && (chromiumInstalled() || Boolean(process.env.CI));

/** A tiny loopback server for an app's page (blank: the test drives it with page.evaluate). */
async function pageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>app</title><body>app</body>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** What a page's fetch came to: a response it could read, or the browser's refusal. */
type Outcome = { ok: true; status: number; body: any; headers: Record<string, string | null> } | { ok: false; error: string };

describe.runIf(run)('a browser app on another origin, in Chromium', () => {
  let browser: ChromiumSession;
  let context: BrowserContext;
  let s: TestServer;
  let allowed: { server: Server; origin: string };
  let other: { server: Server; origin: string };
  const email = uniqueEmail('app');
  let userId: string;
  let accessToken: string;
  const corsErrors: string[] = [];

  beforeAll(async () => {
    [allowed, other] = await Promise.all([pageServer(), pageServer()]);
    s = await startServerAt({ NODE_ENV: 'production', BCRYPT_COST: '10', CORS_ORIGINS: allowed.origin });
    await register(s.url, email, PASSWORD, 'App User');
    browser = await openChromium();
    context = await browser.newContext();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    for (const page of [allowed, other]) page?.server.close();
  });

  async function open(origin: string): Promise<Page> {
    const page = await context.newPage();
    page.on('console', (m) => {
      if (/CORS policy/.test(m.text())) corsErrors.push(m.text());
    });
    await page.goto(`${origin}/`);
    return page;
  }

  /** `fetch` in the page, with credentials, as an app does. */
  function call(page: Page, path: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<Outcome> {
    return page.evaluate(
      async ({ url, init }) => {
        try {
          const response = await fetch(url, {
            method: init.method ?? 'GET',
            credentials: 'include',
            headers: init.headers,
            body: init.body === undefined ? undefined : JSON.stringify(init.body),
          });
          const text = await response.text();
          const headers: Record<string, string | null> = {};
          for (const name of ['content-type', 'x-ratelimit-remaining', 'x-ratelimit-limit']) headers[name] = response.headers.get(name);
          return { ok: true as const, status: response.status, body: text ? JSON.parse(text) : null, headers };
        } catch (error) {
          return { ok: false as const, error: String(error) };
        }
      },
      { url: `${s.url}${path}`, init },
    );
  }

  const gql = (page: Page, query: string, headers: Record<string, string> = {}) =>
    call(page, '/graphql', { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: { query } });

  it('the allowed page signs in and calls /graphql with the Bearer token, with the cookie, and over GET', async () => {
    const page = await open(allowed.origin);
    const login = await call(page, '/api/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: { email, password: PASSWORD } });
    expect(login).toMatchObject({ ok: true, status: 200 });
    ({ accessToken } = (login as { body: { accessToken: string } }).body);
    userId = (login as { body: { user: { id: string } } }).body.user.id;
    // The cookies landed in the browser (HttpOnly: the page cannot read them).
    expect((await context.cookies(s.url)).map((c) => c.name)).toContain('auth-token');

    // Bearer, with the headers Apollo Client adds: all in the preflight's allow-list.
    const apollo = { 'apollographql-client-name': 'web', 'apollographql-client-version': '1.0.0', 'x-apollo-operation-name': 'Me' };
    const withBearer = await gql(page, 'query Me { me { id } }', { authorization: `Bearer ${accessToken}`, ...apollo });
    expect(withBearer).toMatchObject({ ok: true, status: 200, body: { data: { me: { id: userId } } } });
    // The rate-limit headers are exposed to the page.
    expect(Number((withBearer as { headers: Record<string, string> }).headers['x-ratelimit-remaining'])).toBeGreaterThan(0);

    const withCookie = await gql(page, '{ me { id } }');
    expect(withCookie).toMatchObject({ ok: true, status: 200, body: { data: { me: { id: userId } } } });

    const overGet = await call(page, `/graphql?query=${encodeURIComponent('{ me { id } }')}`);
    expect(overGet).toMatchObject({ ok: true, status: 200, body: { data: { me: { id: userId } } } });
    await page.close();
  });

  it('the other page, same-site but not listed, is blocked by the browser: nothing to read, no write done', async () => {
    const page = await open(other.origin);
    const before = corsErrors.length;
    expect(await gql(page, '{ me { id } }', { authorization: `Bearer ${accessToken}` })).toMatchObject({ ok: false, error: expect.stringMatching(/TypeError/) });
    expect(await gql(page, '{ me { id } }')).toMatchObject({ ok: false }); // the cookie alone
    // A simple GET needs no preflight: it reaches the service, but the page may not read the answer.
    expect(await call(page, `/graphql?query=${encodeURIComponent('{ me { id } }')}`)).toMatchObject({ ok: false });

    // A mutation: its preflight is refused, so the request itself is never sent.
    const rename = `mutation { updateUser(id: "${userId}", name: "Renamed") { name } }`;
    expect(await gql(page, rename, { authorization: `Bearer ${accessToken}` })).toMatchObject({ ok: false });
    const nameNow = async () => (await s.inkwell.services.users.byIds([userId]))[0]?.name;
    expect(await nameNow()).toBe('App User');
    // Chromium says why, once per refused request.
    expect(corsErrors.length - before).toBeGreaterThanOrEqual(4);
    await page.close();

    // The same mutation from the listed origin goes through.
    const mine = await open(allowed.origin);
    expect(await gql(mine, rename, { authorization: `Bearer ${accessToken}` })).toMatchObject({ ok: true, body: { data: { updateUser: { name: 'Renamed' } } } });
    expect(await nameNow()).toBe('Renamed');
    await mine.close();
  });

  it('the WebSocket takes the cookie from the allowed page only; a connection_init token works from either', async () => {
    /** `me.id` over graphql-transport-ws from the page: the socket's caller, or null. */
    const meOverSocket = (page: Page, payload?: Record<string, unknown>) =>
      page.evaluate(
        ({ url, payload }) =>
          new Promise<string | null>((resolve, reject) => {
            const socket = new WebSocket(url, 'graphql-transport-ws');
            socket.onopen = () => socket.send(JSON.stringify({ type: 'connection_init', payload }));
            socket.onerror = () => reject(new Error('WebSocket error'));
            socket.onmessage = (event) => {
              const message = JSON.parse(String(event.data));
              if (message.type === 'connection_ack') socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: '{ me { id } }' } }));
              if (message.type === 'next') {
                resolve(message.payload.data?.me?.id ?? null);
                socket.close();
              }
              if (message.type === 'error') reject(new Error(JSON.stringify(message.payload)));
            };
          }),
        { url: `${s.url.replace(/^http/, 'ws')}/graphql`, payload },
      );
    const mine = await open(allowed.origin);
    const theirs = await open(other.origin);
    expect(await meOverSocket(mine)).toBe(userId);
    expect(await meOverSocket(theirs)).toBeNull();
    expect(await meOverSocket(theirs, { authorization: `Bearer ${accessToken}` })).toBe(userId);
    await Promise.all([mine.close(), theirs.close()]);
  });

  it('the allowed page refreshes, and signs out only with the CSRF token', async () => {
    const page = await open(allowed.origin);
    // The refresh cookie is SameSite=Strict, Path=/api/auth/refresh: a same-site app's fetch carries it.
    const refreshed = await call(page, '/api/auth/refresh', { method: 'POST' });
    expect(refreshed).toMatchObject({ ok: true, status: 200, body: { accessToken: expect.any(String) } });

    const refused = await call(page, '/api/auth/signout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: {} });
    expect(refused).toMatchObject({ ok: true, status: 403 });
    expect(await gql(page, '{ me { id } }')).toMatchObject({ body: { data: { me: { id: userId } } } });

    const { csrfToken } = ((await call(page, '/api/auth/csrf')) as { body: { csrfToken: string } }).body;
    const signedOut = await page.evaluate(
      async ({ url, csrfToken }) => {
        const response = await fetch(url, {
          method: 'POST',
          credentials: 'include',
          redirect: 'manual',
          headers: { 'content-type': 'application/json', 'x-csrf-token': csrfToken },
          body: '{}',
        });
        return response.type;
      },
      { url: `${s.url}/api/auth/signout`, csrfToken },
    );
    expect(signedOut).toBe('opaqueredirect'); // the 302 to callbackUrl
    expect(await gql(page, '{ me { id } }')).toMatchObject({ ok: true, body: { data: { me: null } } });
    await page.close();
  });
});
