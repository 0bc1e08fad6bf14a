import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, TEST_SECRET, type TestServer } from '../helpers/server.js';

/**
 * The GraphiQL page and its assets over HTTP: outside production the page loads only
 * files of our origin (no inline script, a strict CSP), each under a content-hashed name
 * with a year-long cache; in production neither the page nor any asset exists.
 */
let dev: TestServer;
let prod: TestServer;

beforeAll(async () => {
  [dev, prod] = await Promise.all([startServer(), startServer({ NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET, BCRYPT_COST: '10' })]);
});
afterAll(async () => {
  await Promise.all([dev?.close(), prod?.close()]);
});

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
const require = createRequire(import.meta.url);
const packageFile = (pkg: string, file: string) => readFileSync(join(dirname(require.resolve(`${pkg}/package.json`)), file));

async function page(server: TestServer): Promise<Response> {
  return fetch(`${server.url}/graphql`, { headers: { accept: BROWSER_ACCEPT } });
}

/** The page's script and stylesheet URLs, in document order. */
function assetUrls(html: string): { scripts: string[]; styles: string[] } {
  return {
    scripts: [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => /\bsrc="([^"]+)"/.exec(m[1] ?? '')?.[1] ?? '<inline>'),
    styles: [...html.matchAll(/<link rel="stylesheet" href="([^"]+)">/g)].map((m) => m[1] ?? ''),
  };
}

describe('outside production', () => {
  it('serves the page with a strict Content-Security-Policy and no inline script', async () => {
    const response = await page(dev);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = (response.headers.get('content-security-policy') ?? '').split(/;\s*/);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp.join(';')).not.toMatch(/unsafe-inline|unsafe-eval|https?:|\*/);
    const html = await response.text();
    // GraphiQL's one run-time <style> gets the nonce that the bootstrap script carries.
    const nonce = /<script nonce="([^"]+)" src="\/graphiql\/bootstrap\./.exec(html)?.[1];
    expect(nonce).toMatch(/^[A-Za-z0-9+/]{22}==$/);
    expect(csp).toContain(`style-src 'self' 'nonce-${nonce}'`);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const again = await (await page(dev)).text();
    expect(again).not.toContain(nonce);
    const { scripts, styles } = assetUrls(html);
    expect(scripts).not.toContain('<inline>');
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(scripts.map((src) => src.replace(/\.[0-9a-f]{12}\.js$/, ''))).toEqual([
      '/graphiql/react',
      '/graphiql/react-dom',
      '/graphiql/graphql-ws',
      '/graphiql/graphiql',
      '/graphiql/bootstrap',
    ]);
    expect(styles.map((href) => href.replace(/\.[0-9a-f]{12}\.css$/, ''))).toEqual(['/graphiql/graphiql', '/graphiql/page']);
  });

  it('serves each asset under its content hash, cached for a year', async () => {
    const { scripts, styles } = assetUrls(await (await page(dev)).text());
    for (const path of [...scripts, ...styles]) {
      const response = await fetch(`${dev.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toBe(path.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(response.headers.get('cache-control'), path).toBe('public, max-age=31536000, immutable');
      expect(response.headers.get('x-content-type-options'), path).toBe('nosniff');
      const body = Buffer.from(await response.arrayBuffer());
      const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
      expect(path, 'the name carries the hash of the bytes served').toContain(`.${hash}.`);
    }
  });

  it('serves the builds of the installed, pinned packages', async () => {
    const { scripts, styles } = assetUrls(await (await page(dev)).text());
    const bytes = async (path: string | undefined) => Buffer.from(await (await fetch(`${dev.url}${path}`)).arrayBuffer());
    expect((await bytes(scripts[0])).equals(packageFile('react', 'umd/react.production.min.js'))).toBe(true);
    expect((await bytes(scripts[1])).equals(packageFile('react-dom', 'umd/react-dom.production.min.js'))).toBe(true);
    expect((await bytes(scripts[2])).equals(packageFile('graphql-ws', 'umd/graphql-ws.min.js'))).toBe(true);
    expect((await bytes(scripts[3])).equals(packageFile('graphiql', 'graphiql.min.js'))).toBe(true);
    expect((await bytes(styles[0])).equals(packageFile('graphiql', 'graphiql.min.css'))).toBe(true);
  });

  it('answers 404 for any other name under /graphiql/', async () => {
    const { scripts } = assetUrls(await (await page(dev)).text());
    const stale = scripts[0]?.replace(/\.[0-9a-f]{12}\./, '.000000000000.');
    for (const path of ['/graphiql/react.js', stale, '/graphiql/', '/graphiql/..%2Fpackage.json', '/graphiql/%2e%2e%2fpackage.json']) {
      const response = await fetch(`${dev.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('cache-control') ?? '', path).not.toMatch(/immutable/);
    }
  });
});

describe('in production', () => {
  it('serves no page: a browser asking for /graphql gets an error, not HTML', async () => {
    const response = await page(prod);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    expect(await response.text()).not.toMatch(/graphiql/i);
  });

  it('serves none of the assets', async () => {
    const { scripts, styles } = assetUrls(await (await page(dev)).text());
    expect(scripts.length + styles.length).toBe(7);
    for (const path of [...scripts, ...styles]) {
      const response = await fetch(`${prod.url}${path}`);
      expect(response.status, path).toBe(404);
      // The app's ordinary not-found answer, not the file.
      expect(response.headers.get('content-type'), path).toMatch(/^application\/json/);
      expect(response.headers.get('cache-control') ?? '', path).not.toMatch(/immutable/);
      expect((await response.text()).length, path).toBeLessThan(300);
    }
  });
});
