import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ALLOWED_HEADERS } from '../../src/http/cors.js';
import { PASSWORD, bearer, csrf, login, register, uniqueEmail } from '../auth/helpers.js';
import { corsHeaders, listOf, send, type Sent } from '../helpers/http-request.js';
import { TEST_SECRET, startServer, wsUrl, type TestServer, withoutCost } from '../helpers/server.js';
import { RawSocket } from '../graphql/ws/helpers.js';
import { builtEntry } from '../helpers/service-build.js';

/*
 * CORS over the wire (README "Browser apps"): which origins may call /graphql and
 * /api/* with credentials, what their preflights and responses carry, that every other
 * origin gets no CORS headers (and a 403 preflight), that the pages stay same-origin,
 * that the WebSocket takes the cookie from the same allow-list, and CORS_ORIGINS's
 * validation. The same in Chromium: test/browser/cors.test.ts.
 */

const APP = 'https://app.example.test';
const QUERY = JSON.stringify({ query: '{ me { id } }' });
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };

/** A browser's preflight for a credentialed JSON POST with a Bearer token. */
const preflight = (server: TestServer, path: string, origin: string) =>
  send(server.url, 'OPTIONS', path, {
    origin,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'authorization,content-type',
  });

function expectAllowedPreflight(res: Sent, origin: string) {
  expect(res.status, res.text).toBe(204);
  expect(res.text).toBe('');
  expect(res.headers['access-control-allow-origin']).toBe(origin);
  expect(res.headers['access-control-allow-credentials']).toBe('true');
  expect(res.headers['access-control-allow-methods']).toBe('GET, POST');
  const allowed = listOf(res.headers['access-control-allow-headers']);
  for (const name of ['content-type', 'authorization', 'x-csrf-token', 'apollographql-client-name', 'apollographql-client-version', 'x-apollo-operation-name', 'apollo-require-preflight']) {
    expect(allowed).toContain(name);
  }
  expect(Number(res.headers['access-control-max-age'])).toBeGreaterThan(0);
  expect(listOf(res.headers.vary)).toContain('origin');
}

/** Another origin: a 403 without a single CORS header, so the browser refuses. */
function expectRefusedPreflight(res: Sent) {
  expect(res.status, res.text).toBe(403);
  expect(corsHeaders(res)).toEqual([]);
  expect(listOf(res.headers.vary)).toContain('origin');
}

/** An actual response an allowed origin may read, with the headers a client needs. */
function expectReadable(res: Sent, origin: string) {
  expect(res.headers['access-control-allow-origin']).toBe(origin);
  expect(res.headers['access-control-allow-credentials']).toBe('true');
  expect(listOf(res.headers['access-control-expose-headers'])).toEqual(
    expect.arrayContaining(['retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset', 'www-authenticate']),
  );
  expect(listOf(res.headers.vary)).toContain('origin');
}

function expectUnreadable(res: Sent) {
  expect(corsHeaders(res)).toEqual([]);
  expect(listOf(res.headers.vary)).toContain('origin');
}

describe('outside production: localhost and 127.0.0.1 on any port', () => {
  let server: TestServer;
  let token: string;
  let userId: string;

  beforeAll(async () => {
    server = await startServer({ CORS_ORIGINS: APP });
    const email = uniqueEmail('cors');
    await register(server.url, email);
    ({ accessToken: token, userId } = await login(server.url, email));
  });
  afterAll(() => server?.close());

  it.each(['http://localhost:5173', 'http://127.0.0.1:3000', 'http://localhost', APP])('answers the preflight of %s on /graphql and /api/*', async (origin) => {
    for (const path of ['/graphql', '/graphql?query=%7B__typename%7D', '/api/auth/login', '/api/auth/refresh', '/api/me']) {
      expectAllowedPreflight(await preflight(server, path, origin), origin);
    }
  });

  it.each([
    'https://evil.example',
    'https://localhost:5173', // loopback over https is not in the default
    'http://127.0.0.2:3000',
    'http://localhost.evil.example',
    'null',
    `${APP}.evil.example`,
    'HTTP://LOCALHOST:5173',
  ])('refuses the preflight of %s', async (origin) => {
    const graphql = await preflight(server, '/graphql', origin);
    expectRefusedPreflight(graphql);
    expect(graphql.json).toEqual({ errors: [{ message: 'Origin not allowed', extensions: { code: 'FORBIDDEN' } }] });
    const api = await preflight(server, '/api/auth/login', origin);
    expectRefusedPreflight(api);
    expect(api.json).toEqual({ error: 'Origin not allowed' });
  });

  it('lets an allowed origin read /graphql with a Bearer token and with the cookie, over POST and GET', async () => {
    const origin = 'http://localhost:5173';
    const withBearer = await send(server.url, 'POST', '/graphql', { ...JSON_HEADERS, ...bearer(token), origin }, QUERY);
    expect(withBearer.status).toBe(200);
    expect(withoutCost(withBearer.json)).toEqual({ data: { me: { id: userId } } });
    expectReadable(withBearer, origin);

    const withCookie = await send(server.url, 'POST', '/graphql', { ...JSON_HEADERS, cookie: `auth-token=${token}`, origin }, QUERY);
    expect(withoutCost(withCookie.json)).toEqual({ data: { me: { id: userId } } });
    expectReadable(withCookie, origin);

    const overGet = await send(server.url, 'GET', `/graphql?query=${encodeURIComponent('{ me { id } }')}`, { accept: 'application/json', ...bearer(token), origin });
    expect(withoutCost(overGet.json)).toEqual({ data: { me: { id: userId } } });
    expectReadable(overGet, origin);
  });

  it('carries the CORS headers on a repeated anonymous query (one the response cache answers)', async () => {
    const body = JSON.stringify({ query: '{ books(limit: 2) { id } }' });
    for (let i = 0; i < 3; i++) {
      const res = await send(server.url, 'POST', '/graphql', { ...JSON_HEADERS, origin: APP }, body);
      expect(res.status).toBe(200);
      expectReadable(res, APP);
    }
  });

  it('lets an allowed origin read errors: a 413, a 404, a 429 with Retry-After', async () => {
    const big = await send(server.url, 'POST', '/graphql', { ...JSON_HEADERS, origin: APP }, JSON.stringify({ query: `{ __typename }${' '.repeat(1_048_576)}` }));
    expect(big.status).toBe(413);
    expectReadable(big, APP);

    const missing = await send(server.url, 'GET', '/api/auth/nothing-here', { origin: APP });
    expect(missing.status).toBe(404);
    expectReadable(missing, APP);

    const limited = await startServer({ RATE_LIMIT_MAX: '1', CORS_ORIGINS: APP });
    try {
      const statuses: number[] = [];
      for (const path of ['/graphql', '/graphql']) {
        const res = await send(limited.url, 'POST', path, { ...JSON_HEADERS, ...bearer('x'), origin: APP }, QUERY);
        statuses.push(res.status);
        expectReadable(res, APP);
        if (res.status === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      }
      const login = await send(limited.url, 'POST', '/api/auth/login', { 'content-type': 'application/json', origin: APP }, '{}');
      const again = await send(limited.url, 'POST', '/api/auth/login', { 'content-type': 'application/json', origin: APP }, '{}');
      expect([login.status, again.status]).toEqual([400, 429]);
      expectReadable(again, APP);
      // The bogus token is refused (401, its challenge exposed to the page), then the limit is reached.
      expect(statuses).toEqual([401, 429]);
    } finally {
      await limited.close();
    }
  });

  it('answers another origin as before, without CORS headers: the browser keeps the response from the page', async () => {
    const res = await send(server.url, 'POST', '/graphql', { ...JSON_HEADERS, ...bearer(token), origin: 'https://evil.example' }, QUERY);
    expect(res.status).toBe(200);
    expectUnreadable(res);
    // No Origin at all (curl, servers): no CORS headers either, and the cache key still says Vary.
    const plain = await send(server.url, 'POST', '/graphql', JSON_HEADERS, QUERY);
    expect(plain.status).toBe(200);
    expectUnreadable(plain);
  });

  it('keeps the CSRF rules: a form post from an allowed origin still needs the token', async () => {
    const fields = new URLSearchParams({ email: 'x@example.test', password: PASSWORD, callbackUrl: '/' }).toString();
    const form = { 'content-type': 'application/x-www-form-urlencoded', origin: APP };
    const withoutToken = await send(server.url, 'POST', '/api/auth/callback/credentials', form, fields);
    expect(withoutToken.status).toBe(403);
    expectReadable(withoutToken, APP);
    // With the double-submit pair it goes through (a failed sign-in: back to the sign-in page).
    const pair = await csrf(server.url);
    const withToken = await send(server.url, 'POST', '/api/auth/callback/credentials', { ...form, cookie: pair.cookie }, `${fields}&csrfToken=${pair.token}`);
    expect(withToken.status).toBe(302);
    expect(withToken.headers.location).toMatch(/^\/login\?error=CredentialsSignin/);
    // And a text/plain body, which needs no preflight, is still not GraphQL.
    const simple = await send(server.url, 'POST', '/graphql', { 'content-type': 'text/plain', origin: 'https://evil.example', cookie: `auth-token=${token}` }, QUERY);
    expect(simple.status).toBe(415);
  });

  it('answers an OPTIONS from an allowed origin that is not a preflight as its path would any unrouted method', async () => {
    // No Access-Control-Request-Method: not a preflight, so not the CORS plugin's to answer.
    const graphql = await send(server.url, 'OPTIONS', '/graphql', { origin: APP });
    expect(graphql.status).toBe(405);
    expect(graphql.headers.allow).toBe('GET, POST');
    const api = await send(server.url, 'OPTIONS', '/api/auth/login', { origin: APP });
    expect(api.status).toBe(404);
    expect(api.json).toEqual({ error: 'Not found' });
    for (const res of [graphql, api]) expect(res.headers['access-control-allow-methods']).toBeUndefined();
    // The same path's real preflight is still answered.
    expectAllowedPreflight(await preflight(server, '/api/auth/login', APP), APP);
  });

  it('leaves the pages, health and static files same-origin: no CORS headers, no preflight', async () => {
    for (const path of ['/login', '/account', '/healthz', '/readyz']) {
      const res = await send(server.url, 'GET', path, { origin: APP });
      expect(res.status, path).toBeLessThan(500);
      expect(corsHeaders(res), path).toEqual([]);
    }
    for (const path of ['/login', '/healthz']) {
      const res = await preflight(server, path, APP);
      expect(res.status, path).toBe(404);
      expect(res.json).toEqual({ error: 'Not found' });
      expect(corsHeaders(res), path).toEqual([]);
    }
  });
});

describe('in production', () => {
  let prod: TestServer;
  let listed: TestServer;
  beforeAll(async () => {
    [prod, listed] = await Promise.all([
      startServer({ NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET, BCRYPT_COST: '10' }),
      startServer({ NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET, BCRYPT_COST: '10', CORS_ORIGINS: `${APP}, https://admin.example.test` }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([prod?.close(), listed?.close()]);
  });

  it('allows no origin by default, loopback included', async () => {
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:3000', APP]) {
      expectRefusedPreflight(await preflight(prod, '/graphql', origin));
      expectUnreadable(await send(prod.url, 'POST', '/graphql', { ...JSON_HEADERS, origin }, QUERY));
    }
  });

  it('allows exactly the origins of CORS_ORIGINS', async () => {
    for (const origin of [APP, 'https://admin.example.test']) {
      expectAllowedPreflight(await preflight(listed, '/graphql', origin), origin);
      expectAllowedPreflight(await preflight(listed, '/api/auth/login', origin), origin);
      expectReadable(await send(listed.url, 'POST', '/graphql', { ...JSON_HEADERS, origin }, QUERY), origin);
    }
    for (const origin of ['http://localhost:5173', 'http://app.example.test', 'https://app.example.test:8443', 'https://example.test']) {
      expectRefusedPreflight(await preflight(listed, '/graphql', origin));
    }
  });
});

describe('the WebSocket takes the cookie from the same allow-list', () => {
  let prod: TestServer;
  let dev: TestServer;
  const sessions = new Map<TestServer, { token: string; userId: string }>();

  beforeAll(async () => {
    [prod, dev] = await Promise.all([
      startServer({ NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET, BCRYPT_COST: '10', CORS_ORIGINS: APP }),
      startServer(),
    ]);
    for (const server of [prod, dev]) {
      const email = uniqueEmail('ws');
      await register(server.url, email);
      const session = await login(server.url, email);
      sessions.set(server, { token: session.accessToken, userId: session.userId });
    }
  });
  afterAll(async () => {
    await Promise.all([prod?.close(), dev?.close()]);
  });

  /** Who the socket's caller is: the user's id, or null when anonymous. */
  async function meOver(server: TestServer, headers: Record<string, string>, params?: Record<string, unknown>): Promise<string | null> {
    const socket = await RawSocket.open(wsUrl(server), 'graphql-transport-ws', { headers });
    try {
      await socket.init(params);
      socket.subscribe('1', '{ me { id } }');
      const next = await socket.next((m) => m.type === 'next' || m.type === 'error');
      return next.payload.data?.me?.id ?? null;
    } finally {
      socket.close();
    }
  }

  it('an allowed origin authenticates by cookie; another origin does not, but may send a token', async () => {
    const { token, userId } = sessions.get(prod)!;
    const cookie = `auth-token=${token}`;
    expect(await meOver(prod, { cookie, origin: APP })).toBe(userId);
    expect(await meOver(prod, { cookie, origin: 'https://evil.example' })).toBeNull();
    expect(await meOver(prod, { cookie, origin: 'http://localhost:5173' })).toBeNull(); // not in production
    expect(await meOver(prod, { origin: 'https://evil.example' }, { authorization: `Bearer ${token}` })).toBe(userId);
    expect(await meOver(prod, { cookie })).toBe(userId); // no Origin: not a browser
  });

  it('outside production, a page on localhost or 127.0.0.1 authenticates by cookie', async () => {
    const { token, userId } = sessions.get(dev)!;
    const cookie = `auth-token=${token}`;
    expect(await meOver(dev, { cookie, origin: 'http://localhost:5173' })).toBe(userId);
    expect(await meOver(dev, { cookie, origin: 'http://127.0.0.1:3000' })).toBe(userId);
    expect(await meOver(dev, { cookie, origin: 'https://evil.example' })).toBeNull();
  });
});

describe('CORS_ORIGINS is validated at start-up', () => {
  const base = { NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET };
  const problemsOf = (value: string): string[] => {
    try {
      loadConfig({ ...base, CORS_ORIGINS: value });
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  it('accepts exact origins, with spaces and empty entries', () => {
    expect(loadConfig({ ...base, CORS_ORIGINS: ` ${APP} ,http://localhost:5173,, https://[::1]:8443 ` }).cors).toEqual({
      origins: [APP, 'http://localhost:5173', 'https://[::1]:8443'],
      allowLoopback: false,
    });
    expect(loadConfig({ ...base, CORS_ORIGINS: '' }).cors).toEqual({ origins: [], allowLoopback: false });
    expect(loadConfig({ ...base }).cors).toEqual({ origins: [], allowLoopback: false });
    expect(loadConfig({ NODE_ENV: 'development' }).cors).toEqual({ origins: [], allowLoopback: true });
  });

  it.each([
    ['*', /not allowed/],
    ['null', /not allowed/],
    ['app.example.test', /not an origin/],
    ['ftp://files.example.test', /http or https/],
    [`${APP}/`, /did you mean "https:\/\/app\.example\.test"/],
    [`${APP}/path`, /did you mean/],
    ['https://App.Example.test', /did you mean "https:\/\/app\.example\.test"/],
    [`${APP}:443`, /did you mean "https:\/\/app\.example\.test"/],
    ['https://user:pass@app.example.test', /did you mean/],
  ])('refuses %s, naming the variable', (value, reason) => {
    const problems = problemsOf(value);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^CORS_ORIGINS: /);
    expect(problems[0]).toMatch(reason);
  });

  it('reports every bad entry at once', () => {
    expect(problemsOf(`*, ${APP}, ${APP}/x`)).toHaveLength(2);
  });

  it('stops the process with a message naming the variable', async () => {
    const result = spawnSync(process.execPath, [await builtEntry('main')], {
      env: { PATH: process.env.PATH, NODE_ENV: 'development', CORS_ORIGINS: `${APP}/`, DATABASE_URL: 'file:/nonexistent/never-opened.db' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('CORS_ORIGINS');
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
