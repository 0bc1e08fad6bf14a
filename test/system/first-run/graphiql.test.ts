import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../../helpers/browser.js';
import { startServer, type TestServer } from '../../helpers/server.js';

/**
 * GraphiQL's first visit opens on an example query of the demo data (README "Quick
 * start"), not on GraphiQL's generic welcome text: the page hands the example to
 * GraphiQL, the example runs as it stands against a freshly seeded service, and in a
 * real browser it is what the editor holds and what the run button answers.
 */
const EXAMPLE = readFileSync(fileURLToPath(new URL('../../../src/graphiql/client/example.graphql', import.meta.url)), 'utf8');
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** The newest published demo posts and the newest books, as an anonymous caller sees them. */
const NEWEST_POSTS = ['Open the pod bay doors: a review', 'Poetry in orbit', 'On building bookshelves'];
const NEWEST_BOOKS = ['Beloved', 'The Odyssey', '2001: A Space Odyssey'];

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
});
afterAll(async () => {
  await server?.close();
});

/** The value of the page's `data-default-query`, unescaped as a browser does. */
function defaultQueryOf(page: string): string | undefined {
  const raw = /<div id="graphiql" data-default-query="([^"]*)"/.exec(page)?.[1];
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#96': '`' };
  return raw?.replace(/&(amp|lt|gt|quot|#39|#96);/g, (_, name: string) => entities[name] ?? '');
}

describe('GraphiQL on a first visit', () => {
  it('the page hands GraphiQL the example query', async () => {
    const response = await fetch(`${server.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
    expect(response.status).toBe(200);
    expect(defaultQueryOf(await response.text())).toBe(EXAMPLE);
  });

  it('the example runs as it stands against the demo data', async () => {
    const result = await server.gql(EXAMPLE);
    expect(result.status).toBe(200);
    expect(result.body.errors).toBeUndefined();
    const data = result.body.data as {
      posts: { title: string; author: { name: string }; reactions: { user: { name: string } }[] }[];
      books: { title: string }[];
      me: null;
    };
    expect(data.posts.map((p) => p.title)).toEqual(NEWEST_POSTS);
    expect(data.posts[0]?.author.name).toBe('Dave Bowman');
    expect(data.posts[0]?.reactions.map((r) => r.user.name).sort()).toEqual(['Ada Admin', 'Bob Builder']);
    expect(data.books.map((b) => b.title)).toEqual(NEWEST_BOOKS);
    expect(data.me).toBeNull();
  });

  describe.runIf(chromiumInstalled() || Boolean(process.env.CI))('in Chromium', () => {
    let browser: ChromiumSession;
    beforeAll(async () => {
      browser = await openChromium();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('the editor holds the example, and the run button answers it with the demo data', async () => {
      const context = await browser.newContext(); // a fresh profile: nothing kept from an earlier visit
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (e) => problems.push(e.message));
      await page.goto(`${server.url}/graphql`);
      await page.waitForSelector('.graphiql-query-editor .CodeMirror');
      const editor = () =>
        page.evaluate(() => {
          const { document } = globalThis as unknown as { document: { querySelector(s: string): { CodeMirror: { getValue(): string } } | null } };
          return document.querySelector('.graphiql-query-editor .CodeMirror')?.CodeMirror.getValue();
        });
      expect(await editor()).toBe(EXAMPLE);
      expect(await editor()).not.toContain('Welcome to GraphiQL');

      await page.click('.graphiql-execute-button');
      const handle = await page.waitForFunction(
        () => {
          const { document } = globalThis as unknown as { document: { querySelector(s: string): { CodeMirror: { getValue(): string } } | null } };
          const value = document.querySelector('.graphiql-response .CodeMirror')?.CodeMirror.getValue() ?? '';
          return value.includes('"books"') ? value : false;
        },
        undefined,
        { timeout: 15_000 },
      );
      const shown = JSON.parse((await handle.jsonValue()) as string);
      expect(shown.data.posts.map((p: { title: string }) => p.title)).toEqual(NEWEST_POSTS);
      expect(problems).toEqual([]);
      await context.close();
    });
  });
});
