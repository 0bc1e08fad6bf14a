import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD, register, uniqueEmail } from '../../auth/helpers.js';
import { chromiumInstalled, openChromium, type ChromiumSession } from '../../helpers/browser.js';
import { startServer, type TestServer } from '../../helpers/server.js';
import { ROOT, scratchDir } from '../ops/helpers.js';
import { live, snippet } from './readme.js';

/*
 * The README's `credentials` snippet (README "Browser apps": Apollo Client, urql and
 * fetch told to send credentials), read from README.md with the API's address swapped
 * in. It runs as written in Node, where there are no cookies to send; and, bundled as an
 * app would bundle it, on a page of another origin of the same site in Chromium, where
 * all three send the session cookie: signed in, each reads `me`; signed out, none does.
 */

let server: TestServer;
let dir: string;
const code = () => live(snippet('credentials').code, server.url);

beforeAll(async () => {
  server = await startServer();
  dir = scratchDir('readme-credentials');
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Runs a module with node and collects its output. */
function runNode(file: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [file], { cwd: ROOT, env: { ...process.env, NODE_ENV: 'development' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('in Node', () => {
  it('runs as written: each client asks, and, with no cookie to send, is anonymous', async () => {
    const file = join(dir, 'credentials.mjs');
    writeFileSync(file, code());
    const result = await runNode(file);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toBe('{ me: null }\n'.repeat(3));
  });
});

describe.runIf(chromiumInstalled() || Boolean(process.env.CI))('in Chromium, on another origin of the same site', () => {
  let browser: ChromiumSession;
  let app: { server: Server; origin: string };

  beforeAll(async () => {
    // The app's bundle, as a bundler makes it for browsers.
    const bundle = await build({
      stdin: { contents: code(), resolveDir: ROOT, loader: 'js', sourcefile: 'credentials.js' },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      define: { 'process.env.NODE_ENV': '"production"' },
      write: false,
      logLevel: 'silent',
    });
    const script = bundle.outputFiles[0]!.text;
    // The app's own server: another port of 127.0.0.1, an origin the service allows outside production.
    const pages = createServer((request, response) => {
      if (request.url === '/app.js') {
        response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
        response.end(script);
      } else {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end('<!doctype html><title>app</title><body>app</body>');
      }
    });
    await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
    app = { server: pages, origin: `http://127.0.0.1:${(pages.address() as { port: number }).port}` };
    browser = await openChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => app?.server.close(resolve));
  });

  /** Opens the app's page, signs in from it first when asked, then runs the bundle; returns what it logged. */
  async function runApp(signIn?: { email: string; password: string }): Promise<unknown[]> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const logged: Promise<unknown>[] = [];
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'log') logged.push(message.args()[0]!.jsonValue());
      else if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(app.origin);
    if (signIn) {
      const status = await page.evaluate(
        ({ api, body }) =>
          fetch(`${api}/api/auth/login`, { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json' }, body }).then((r) => r.status),
        { api: server.url, body: JSON.stringify(signIn) },
      );
      expect(status).toBe(200);
    }
    await page.addScriptTag({ url: '/app.js', type: 'module' });
    await expect.poll(() => logged.length + problems.length, { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    const values = await Promise.all(logged);
    await context.close();
    expect(problems).toEqual([]);
    return values;
  }

  it('signed in on the API: each of the three clients sends the cookie and reads `me`', async () => {
    const email = uniqueEmail('credentials');
    await register(server.url, email, PASSWORD, 'Cross Origin');
    const logged = await runApp({ email, password: PASSWORD });
    expect(logged).toEqual([
      { me: { __typename: 'User', name: 'Cross Origin' } },
      { me: { name: 'Cross Origin' } },
      { me: { name: 'Cross Origin' } },
    ]);
  });

  it('not signed in: the same bundle is anonymous', async () => {
    const logged = await runApp();
    expect(logged).toEqual([{ me: null }, { me: null }, { me: null }]);
  });
});
