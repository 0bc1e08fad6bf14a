import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD, bearer, gqlAt, login, register, signUpAs, startServerAt, uniqueEmail } from '../auth/helpers.js';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../helpers/browser.js';
import type { TestServer } from '../helpers/server.js';

// GraphiQL in a real browser (Debian's Chromium through playwright-core), with the
// network cut off beyond loopback: every request the page makes is recorded and any
// that would leave the machine is aborted and fails the test. Queries, a mutation
// signed in through the cookie, and a subscription over the WebSocket whose upgrade
// carries the same cookie. CI installs Chromium (.ci/run); elsewhere the file is skipped.

const run = chromiumInstalled() || Boolean(process.env.CI);

const isLoopback = (url: string) => {
  const { protocol, hostname } = new URL(url);
  return ['http:', 'https:', 'ws:', 'wss:'].includes(protocol) && ['127.0.0.1', 'localhost', '[::1]'].includes(hostname);
};

/** GraphiQL's CodeMirror 5 editors as page functions see them (the tests compile without DOM types). */
interface PageGlobals {
  document: { querySelector(selector: string): { CodeMirror: Editor } | null };
}
interface Editor {
  setValue(value: string): void;
  getValue(): string;
  /** GraphiQL's parse of the text, updated shortly after each change. */
  documentAST?: { loc?: { source: { body: string } } } | null;
}

describe.runIf(run)('GraphiQL in Chromium, offline but for loopback', () => {
  let browser: ChromiumSession;
  let s: TestServer;
  const user = { email: uniqueEmail('graphiql'), name: 'Gina Graphiql' };
  let postId: string;

  beforeAll(async () => {
    s = await startServerAt();
    await register(s.url, user.email, PASSWORD, user.name);
    const editor = await signUpAs(s, 'editor', 'Eddie Editor');
    const created = await gqlAt(
      s.url,
      'mutation($a: ID!) { createPost(title: "Watched", authorId: $a, published: true) { id } }',
      { a: editor.userId },
      { headers: bearer(editor.accessToken) },
    );
    postId = created.body.data.createPost.id;
    browser = await openChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
  });

  interface Watched {
    context: BrowserContext;
    page: Page;
    /** Every URL the page asked for, WebSockets included. */
    requested: string[];
    /** Requests that would have left loopback (aborted). */
    escaped: string[];
    /** CSP violations and script errors. */
    problems: string[];
  }

  /** A fresh profile whose only reachable network is loopback. */
  async function newWatchedPage(): Promise<Watched> {
    const context = await browser.newContext();
    const requested: string[] = [];
    const escaped: string[] = [];
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (isLoopback(url)) return route.continue();
      escaped.push(url);
      return route.abort('internetdisconnected');
    });
    // WebSockets are not requests: those beyond loopback are refused on their own route.
    await context.routeWebSocket(
      (url) => !isLoopback(url.href),
      (ws) => {
        escaped.push(ws.url());
        return ws.close();
      },
    );
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('websocket', (ws) => requested.push(ws.url()));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    return { context, page, requested, escaped, problems };
  }

  /** Waits for GraphiQL to render its query editor. */
  async function openGraphiQL(page: Page) {
    await page.waitForSelector('.graphiql-query-editor .CodeMirror');
  }

  /**
   * Puts an operation in the editor and runs it with GraphiQL's own button, once GraphiQL
   * has parsed the new text (it does so shortly after a change; the fetcher chooses the
   * WebSocket from the parsed document, as it does for someone typing).
   */
  async function runOperation(page: Page, text: string) {
    await page.evaluate((value) => {
      const { document } = globalThis as unknown as PageGlobals;
      document.querySelector('.graphiql-query-editor .CodeMirror')?.CodeMirror.setValue(value);
    }, text);
    await page.waitForFunction((value) => {
      const { document } = globalThis as unknown as PageGlobals;
      return document.querySelector('.graphiql-query-editor .CodeMirror')?.CodeMirror.documentAST?.loc?.source.body === value;
    }, text);
    await page.click('.graphiql-execute-button');
  }

  /** The result pane's text, once it matches. */
  async function resultMatching(page: Page, pattern: RegExp): Promise<string> {
    const handle = await page.waitForFunction(
      (source) => {
        const { document } = globalThis as unknown as PageGlobals;
        const value = document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror.getValue() ?? '';
        return new RegExp(source).test(value) ? value : false;
      },
      pattern.source,
      { timeout: 15_000 },
    );
    return (await handle.jsonValue()) as string;
  }

  it('loads from our origin only and runs a query', async () => {
    const { context, page, requested, escaped, problems } = await newWatchedPage();
    await page.goto(`${s.url}/graphql`);
    await openGraphiQL(page);
    await runOperation(page, '{ me { name } users { name } }');
    const result = JSON.parse(await resultMatching(page, /"users"/));
    expect(result.data.me).toBeNull();
    expect(result.data.users.map((u: { name: string }) => u.name)).toContain(user.name);

    expect(escaped).toEqual([]);
    expect(requested.filter((url) => !url.startsWith(s.url))).toEqual([]);
    expect(requested.filter((url) => new URL(url).pathname.startsWith('/graphiql/'))).toHaveLength(7);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('shows the schema and opens its dialogs under the Content-Security-Policy', async () => {
    const { context, page, escaped, problems } = await newWatchedPage();
    await page.goto(`${s.url}/graphql`);
    await openGraphiQL(page);
    // The documentation explorer lists the root types: introspection went through our fetcher.
    await page.click('[aria-label="Show Documentation Explorer"]');
    await page.click('.graphiql-doc-explorer a:has-text("Subscription")');
    await page.waitForSelector('.graphiql-doc-explorer :text("postReactionAdded")');
    // The dialogs lock scrolling with a <style> element of their own (style-src-elem).
    await page.click('[aria-label="Open settings dialog"]');
    await page.waitForSelector('[role=dialog]');
    await page.keyboard.press('Escape');
    await page.click('[aria-label="Open short keys dialog"]');
    await page.waitForSelector('[role=dialog]');
    await page.keyboard.press('Escape');
    await page.waitForSelector('[role=dialog]', { state: 'detached' });

    expect(escaped).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('signed in through the cookie: a mutation over HTTP, a subscription over the WebSocket', async () => {
    const { context, page, requested, escaped, problems } = await newWatchedPage();
    await page.goto(`${s.url}/login?callbackUrl=%2Fgraphql`);
    await page.fill('input[name=email]', user.email);
    await page.fill('input[name=password]', PASSWORD);
    await Promise.all([page.waitForURL(`${s.url}/graphql`), page.click('form[action="/api/auth/callback/credentials"] button[type=submit]')]);
    await openGraphiQL(page);

    // The email is shown only to the user themself: the POST carried the auth-token cookie.
    await runOperation(page, `mutation { addReaction(postId: "${postId}", type: "like") { type user { email } } }`);
    const added = JSON.parse(await resultMatching(page, /"addReaction"/));
    expect(added.data.addReaction).toEqual({ type: 'like', user: { email: user.email } });

    const before = s.inkwell.realtime.stats().subscribers;
    await runOperation(page, `subscription { postReactionAdded(postId: "${postId}") { type user { name email } } }`);
    await expect.poll(() => s.inkwell.realtime.stats().subscribers, { timeout: 15_000 }).toBe(before + 1);

    // The event, triggered over HTTP by the same user in another session, reaches the pane;
    // its email is visible because the socket's upgrade carried the cookie too.
    const session = await login(s.url, user.email);
    const trigger = await gqlAt(s.url, `mutation { addReaction(postId: "${postId}", type: "clap") { id } }`, undefined, { headers: bearer(session.accessToken) });
    expect(trigger.body.errors).toBeUndefined();
    const event = JSON.parse(await resultMatching(page, /"clap"/));
    expect(event.data.postReactionAdded).toEqual({ type: 'clap', user: { name: user.name, email: user.email } });

    const wsUrl = `${s.url.replace(/^http/, 'ws')}/graphql`;
    expect(requested).toContain(wsUrl);
    expect(requested.filter((url) => !url.startsWith(s.url) && url !== wsUrl)).toEqual([]);
    expect(escaped).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
