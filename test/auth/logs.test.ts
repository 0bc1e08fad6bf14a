import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scrubUrl } from '../../src/auth/log.js';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.js';
import { testBackend, TEST_SECRET } from '../helpers/server.js';
import { PASSWORD, cookieOf, cookies, csrf, form, freePort, jsonOf, json, parseSetCookie, register, uniqueEmail } from './helpers.js';
import { builtEntry } from '../helpers/service-build.js';

// Logs must never contain passwords or tokens. The real service (src/main.ts) runs as a
// child process logging at `trace`; the tests drive every credential-carrying path
// through it and then search everything it wrote.

describe.runIf(testBackend === 'sqlite')('nothing secret reaches the log', () => {
  let child: ChildProcess;
  let idp: TestIdp;
  let url: string;
  let output = '';
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-logs-'));
  const secrets: string[] = [];

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    idp = await startTestIdp({ redirectUris: [`${url}/api/auth/callback/testidp`] });
    child = spawn(process.execPath, [await builtEntry('main')], {
      env: {
        ...withoutRedis(process.env),
        NODE_ENV: 'development',
        PORT: String(port),
        HOST: '127.0.0.1',
        PUBLIC_URL: url,
        DATABASE_URL: `file:${join(dir, 'inkwell.db')}`,
        AUTH_SECRET: TEST_SECRET,
        BCRYPT_COST: '4',
        LOG_LEVEL: 'trace',
        SEED_DEMO_DATA: 'never',
        OAUTH_TESTIDP_ISSUER: idp.issuer,
        OAUTH_TESTIDP_CLIENT_ID: idp.clientId,
        OAUTH_TESTIDP_CLIENT_SECRET: idp.clientSecret,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const deadline = Date.now() + 30_000;
    while (!output.includes('Inkwell GraphQL endpoint')) {
      if (Date.now() > deadline || child.exitCode !== null) {
        await new Promise((r) => setTimeout(r, 200));
        throw new Error(`the service did not start (exit ${child.exitCode}):\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    await idp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('through registration, login, refresh, sign-out, the sign-in form and an OAuth flow', async () => {
    const email = uniqueEmail('logged');
    await register(url, email, PASSWORD);
    secrets.push(PASSWORD);

    const loginResponse = await fetch(`${url}/api/auth/login`, json({ email, password: PASSWORD }));
    const { accessToken } = await jsonOf(loginResponse);
    const refreshToken = cookieOf(loginResponse, 'refresh-token')!.value;
    secrets.push(accessToken, refreshToken);
    await fetch(`${url}/api/auth/login`, json({ email, password: 'a wrong password that must not be logged' }));
    secrets.push('a wrong password that must not be logged');

    const refreshed = await fetch(`${url}/api/auth/refresh`, { method: 'POST', headers: cookies(`refresh-token=${refreshToken}`) });
    const next = await jsonOf(refreshed);
    secrets.push(next.accessToken, cookieOf(refreshed, 'refresh-token')!.value);
    await fetch(`${url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${next.accessToken}` }, body: '{"query":"{ me { id } }"}' });

    const { token, cookie } = await csrf(url);
    secrets.push(token, cookie.slice('csrf-token='.length));
    await fetch(`${url}/api/auth/callback/credentials`, form({ email, password: PASSWORD, csrfToken: token, callbackUrl: '/account' }, cookies(cookie)));
    await fetch(`${url}/api/auth/signout`, form({ csrfToken: token }, cookies(cookie, `auth-token=${next.accessToken}`)));

    // The OAuth flow: the code and state travel in the callback's URL.
    idp.setAccount('logged-acct', { email: uniqueEmail('oidc'), emailVerified: true, name: 'Logged' });
    idp.loginAs('logged-acct');
    const start = await fetch(`${url}/api/auth/signin/testidp`, form({ csrfToken: token, callbackUrl: '/account' }, cookies(cookie)));
    const flowCookie = cookieOf(start, 'oauth-flow')!.value;
    secrets.push(flowCookie);
    const idpCookies = new Map<string, string>();
    let location = new URL(start.headers.get('location')!);
    while (location.origin === idp.issuer) {
      const r = await fetch(location, { redirect: 'manual', headers: { cookie: [...idpCookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
      for (const raw of r.headers.getSetCookie()) {
        const c = parseSetCookie(raw);
        idpCookies.set(c.name, c.value);
      }
      location = new URL(r.headers.get('location')!, location);
    }
    const code = location.searchParams.get('code')!;
    const state = location.searchParams.get('state')!;
    secrets.push(code, state);
    const done = await fetch(location, { redirect: 'manual', headers: cookies(`oauth-flow=${flowCookie}`) });
    expect(done.headers.get('location')).toBe('/account');
    secrets.push(cookieOf(done, 'auth-token')!.value, cookieOf(done, 'refresh-token')!.value);
    // And a replay, which fails and logs a warning.
    await fetch(location, { redirect: 'manual', headers: cookies(`oauth-flow=${flowCookie}`) });

    await new Promise((r) => setTimeout(r, 300));
    expect(output).toContain('request completed');
    expect(output).toContain('external sign-in callback refused');
    expect(output).toContain('/api/auth/callback/testidp?code=%5Bredacted%5D');
    for (const secret of secrets) {
      expect(secret.length).toBeGreaterThan(7);
      expect(output.includes(secret), `the log contains ${secret.slice(0, 12)}…`).toBe(false);
    }
  });
});

function withoutRedis(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { REDIS_URL: _redis, DATABASE_URL: _db, ...rest } = env;
  return rest;
}

describe('scrubUrl', () => {
  it.each([
    ['/graphql', '/graphql'],
    ['/login?callbackUrl=%2Faccount', '/login?callbackUrl=%2Faccount'],
    ['/api/auth/callback/x?code=abc&state=def&iss=http%3A%2F%2Fi', '/api/auth/callback/x?code=%5Bredacted%5D&state=%5Bredacted%5D&iss=http%3A%2F%2Fi'],
    ['/x?access_token=a&refresh_token=b&password=c&csrfToken=d', '/x?access_token=%5Bredacted%5D&refresh_token=%5Bredacted%5D&password=%5Bredacted%5D&csrfToken=%5Bredacted%5D'],
  ])('%s', (url, expected) => {
    expect(scrubUrl(url)).toBe(expected);
  });
});
