import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../../helpers/browser.js';
import { startServer, testBackend, type TestServer } from '../../helpers/server.js';
import { account, post } from './helpers.js';

/*
 * graphql-sse's browser client in real Chromium (README, "GraphQL over Server-Sent
 * Events"): it reads the stream with fetch, not EventSource, so it can POST and send
 * credentials. The app's page is on another origin (CORS allows loopback outside
 * production) and signs in with the cookie. CI installs Chromium; elsewhere the file is
 * skipped when it is missing.
 */

const run = testBackend === 'sqlite' && (chromiumInstalled() || Boolean(process.env.CI));
const UMD = fileURLToPath(new URL('../../../node_modules/graphql-sse/umd/graphql-sse.js', import.meta.url));

describe.runIf(run)('graphql-sse in Chromium', () => {
  let browser: ChromiumSession;
  let server: TestServer;
  let app: Server;
  let page: Page;

  beforeAll(async () => {
    server = await startServer();
    app = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>app</title><body>app</body>');
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    browser = await openChromium();
    page = await (await browser.newContext()).newPage();
    await page.goto(`http://127.0.0.1:${(app.address() as { port: number }).port}/`);
    await page.addScriptTag({ path: UMD });
    // The client must not need it: gone from this page.
    await page.evaluate(() => delete (globalThis as any).EventSource);
  });
  afterAll(async () => {
    await browser?.close();
    app?.close();
    await server?.close();
  });

  it('a page signed in by cookie runs a query and receives a subscription event, without EventSource', async () => {
    const editor = await account(server, 'editor', 'Browser Editor');
    const reader = await account(server, 'user', 'Browser Reader');
    const watched = await post(server, editor.user);
    const url = `${server.url}/graphql`;

    // Signed in as the page would: the login sets the auth-token cookie (same site: loopback).
    const login = await page.evaluate(async ({ origin, email, password }) => {
      const response = await fetch(`${origin}/api/auth/login`, {
        method: 'POST',
        credentials: 'include',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });
      return response.status;
    }, { origin: server.url, email: reader.user.email, password: reader.password });
    expect(login).toBe(200);

    const me = await page.evaluate(async (url) => {
      const { createClient } = (globalThis as any).graphqlSse;
      const client = createClient({ url, credentials: 'include', retryAttempts: 0 });
      const results: unknown[] = [];
      for await (const result of client.iterate({ query: '{ me { name } }' })) results.push(result);
      return results;
    }, url);
    expect(me).toEqual([{ data: { me: { name: 'Browser Reader' } }, extensions: { cost: expect.any(Object) } }]);

    await page.evaluate(
      ({ url, id }) => {
        const { createClient } = (globalThis as any).graphqlSse;
        const client = createClient({ url, credentials: 'include', retryAttempts: 0 });
        const seen: { events: unknown[]; connected: boolean; error?: string } = { events: [], connected: false };
        (globalThis as any).seen = seen;
        client.subscribe(
          { query: 'subscription ($id: ID!) { postReactionAdded(postId: $id) { type user { name } } }', variables: { id } },
          { next: (result: unknown) => seen.events.push(result), error: (error: unknown) => (seen.error = String(error)), complete: () => {} },
          { connected: () => (seen.connected = true) },
        );
      },
      { url, id: watched.id },
    );
    await page.waitForFunction(() => (globalThis as any).seen.connected || (globalThis as any).seen.error, undefined, { timeout: 15_000 });
    expect(await page.evaluate(() => (globalThis as any).seen.error)).toBeUndefined();

    const added = await server.gql('mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }', { id: watched.id }, {
      headers: { authorization: `Bearer ${editor.token}` },
    });
    expect(added.body.errors).toBeUndefined();

    await page.waitForFunction(() => (globalThis as any).seen.events.length === 1, undefined, { timeout: 15_000 });
    const events = await page.evaluate(() => (globalThis as any).seen.events);
    expect(events).toEqual([{ data: { postReactionAdded: { type: 'like', user: { name: 'Browser Editor' } } }, extensions: { cost: expect.any(Object) } }]);
    expect(await page.evaluate(() => typeof (globalThis as any).EventSource)).toBe('undefined');
  }, 60_000);
});
