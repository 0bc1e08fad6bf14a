import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { LoginThrottle } from '../../src/auth/login-throttle.js';
import { RedisSlidingWindow } from '../../src/rate-limit/redis-sliding-window.js';
import { RequestLimit } from '../../src/rate-limit/request-limit.js';
import { MemorySlidingWindow } from '../../src/rate-limit/sliding-window.js';
import { scriptCalls, startRedis } from '../helpers/redis.js';
import type { TestServer } from '../helpers/server.js';
import { PASSWORD, bearer, cookies, csrf, form, json, jsonOf, login, register, sleep, startServerAt, uniqueEmail } from '../auth/helpers.js';

// docs/limits.md ("Rate limits"): RATE_LIMIT_MAX per RATE_LIMIT_WINDOW_MS per client (user, else IP),
// counted separately for /graphql and /api/auth/*; 429 with Retry-After; failed
// logins throttled per email address. Each scenario gets its own small-limit server.

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
async function server(env: Record<string, string>): Promise<TestServer> {
  const s = await startServerAt(env);
  servers.push(s);
  return s;
}

const GQL_429 = { error: 'Too many requests', errors: [{ message: 'Too many requests', extensions: { code: 'RATE_LIMITED' } }] };

describe('request rate limit', () => {
  it('/graphql: the request after RATE_LIMIT_MAX answers 429 with Retry-After and both error shapes', async () => {
    const s = await server({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' });
    for (let i = 0; i < 3; i++) expect((await s.gql('{ __typename }')).status).toBe(200);
    const limited = await s.gql('{ __typename }');
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual(GQL_429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // GET is counted too.
    const get = await fetch(`${s.url}/graphql?query=${encodeURIComponent('{ __typename }')}`, { headers: { accept: 'application/json' } });
    expect(get.status).toBe(429);
  });

  it('/api/auth/* is counted separately from /graphql, with {error} and Retry-After', async () => {
    const s = await server({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' });
    for (let i = 0; i < 4; i++) await s.gql('{ __typename }');
    expect((await s.gql('{ __typename }')).status).toBe(429);
    for (let i = 0; i < 3; i++) expect((await fetch(`${s.url}/api/auth/csrf`)).status).toBe(200);
    const limited = await fetch(`${s.url}/api/auth/providers`);
    expect(limited.status).toBe(429);
    expect(await jsonOf(limited)).toEqual({ error: 'Too many requests' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // A login attempt is refused before any password is checked.
    const loginAttempt = await fetch(`${s.url}/api/auth/login`, json({ email: 'a@example.test', password: PASSWORD }));
    expect(loginAttempt.status).toBe(429);
  });

  it('a signed-in caller is counted by user, not by address', async () => {
    const s = await server({ RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW_MS: '60000' });
    const a = uniqueEmail('a');
    const b = uniqueEmail('b');
    await register(s.url, a);
    await register(s.url, b);
    const alice = await login(s.url, a);
    const bob = await login(s.url, b);
    // Same address, three separate counters on /graphql: alice, bob, anonymous.
    for (let i = 0; i < 4; i++) expect((await s.gql('{ me { id } }', {}, { headers: bearer(alice.accessToken) })).status).toBe(200);
    expect((await s.gql('{ me { id } }', {}, { headers: bearer(alice.accessToken) })).status).toBe(429);
    expect((await s.gql('{ me { id } }', {}, { headers: bearer(bob.accessToken) })).status).toBe(200);
    expect((await s.gql('{ me { id } }', {}, { headers: cookies(bob.authCookie) })).status).toBe(200);
    expect((await s.gql('{ __typename }')).status).toBe(200);
    // An invalid token does not buy a fresh counter: it is the address's.
    for (let i = 0; i < 3; i++) await s.gql('{ __typename }', {}, { headers: bearer(`garbage${i}`) });
    expect((await s.gql('{ __typename }', {}, { headers: bearer('more-garbage') })).status).toBe(429);
  });

  it('the window ends and the client may go on', async () => {
    const s = await server({ RATE_LIMIT_MAX: '2', RATE_LIMIT_WINDOW_MS: '2000' });
    // Windows are fixed: on a loaded machine the first requests may straddle a boundary.
    let limited = await s.gql('{ __typename }');
    for (let i = 0; i < 20 && limited.status !== 429; i++) limited = await s.gql('{ __typename }');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(2);
    await sleep(Number(limited.headers.get('retry-after')) * 1000 + 50);
    expect((await s.gql('{ __typename }')).status).toBe(200);
  });
});

describe('failed logins per email address', () => {
  it('after 10 failed attempts the email is throttled (429, Retry-After) even with the right password; other emails are not', async () => {
    const s = await server({});
    const email = uniqueEmail('victim');
    const other = uniqueEmail('bystander');
    await register(s.url, email);
    await register(s.url, other);
    for (let i = 0; i < 10; i++) {
      const response = await fetch(`${s.url}/api/auth/login`, json({ email: i % 2 ? email : email.toUpperCase(), password: `wrong ${i}` }));
      expect(response.status).toBe(401);
    }
    const throttled = await fetch(`${s.url}/api/auth/login`, json({ email, password: PASSWORD }));
    expect(throttled.status).toBe(429);
    expect(await jsonOf(throttled)).toEqual({ error: 'Too many requests' });
    const retryAfter = Number(throttled.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    expect(throttled.headers.getSetCookie()).toEqual([]);

    // The sign-in form says so on the sign-in page.
    const { token, cookie } = await csrf(s.url);
    const viaForm = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email, password: PASSWORD, csrfToken: token, callbackUrl: '/account' }, cookies(cookie)));
    expect(viaForm.status).toBe(302);
    expect(new URL(viaForm.headers.get('location')!, s.url).searchParams.get('error')).toBe('TooManyRequests');

    expect((await fetch(`${s.url}/api/auth/login`, json({ email: other, password: PASSWORD }))).status).toBe(200);
  });

  it('unknown emails are throttled the same way (nothing is revealed)', async () => {
    const s = await server({});
    const ghost = uniqueEmail('ghost');
    for (let i = 0; i < 10; i++) expect((await fetch(`${s.url}/api/auth/login`, json({ email: ghost, password: 'x' }))).status).toBe(401);
    expect((await fetch(`${s.url}/api/auth/login`, json({ email: ghost, password: 'x' }))).status).toBe(429);
  });

  it('a successful login clears the count', async () => {
    const s = await server({});
    const email = uniqueEmail('forgetful');
    await register(s.url, email);
    for (let i = 0; i < 9; i++) await fetch(`${s.url}/api/auth/login`, json({ email, password: 'wrong' }));
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: PASSWORD }))).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: 'wrong' }))).status).toBe(401);
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: PASSWORD }))).status).toBe(200);
  });

  it('concurrent guesses cannot slip past the limit', async () => {
    const s = await server({});
    const email = uniqueEmail('burst');
    await register(s.url, email);
    const statuses = await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(`${s.url}/api/auth/login`, json({ email, password: `guess ${i}` })).then((r) => r.status)));
    expect(statuses.filter((st) => st === 401)).toHaveLength(10);
    expect(statuses.filter((st) => st === 429)).toHaveLength(10);
  });
});

describe('the counters behind the limits', () => {
  // A client of a Redis that is not there: never connected, so every call falls back.
  const absentRedis = () => new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false });

  it('fall back to per-instance counting when the shared store is down', async () => {
    const redis = absentRedis();
    const errors: unknown[] = [];
    try {
      const limit = new RequestLimit(2, 60_000, { client: redis, keyPrefix: 'down:rl' });
      expect((await limit.decide('k')).allowed).toBe(true);
      expect((await limit.decide('k')).allowed).toBe(true);
      expect(await limit.decide('k')).toMatchObject({ allowed: false, limit: 2, remaining: 0 });
      const window = new RedisSlidingWindow(redis, 'down:signin:', { limit: 1, windowMs: 60_000 }, (e) => errors.push(e));
      expect((await window.take('k')).allowed).toBe(true);
      expect((await window.take('k')).allowed).toBe(false);
      await expect(window.clear('k')).resolves.toBeUndefined();
      expect((await window.take('k')).allowed).toBe(true);
    } finally {
      redis.disconnect();
    }
  });

  it('with Redis, the requests of one turn on one key are one count, each allowed as it would have been alone', async () => {
    const redisServer = await startRedis();
    const redis = new Redis(redisServer.url);
    try {
      const limit = new RequestLimit(3, 60_000, { client: redis, keyPrefix: 'turn:rl' });
      await redis.ping(); // ready: a client still connecting counts in memory
      const before = await scriptCalls(redis);
      const decisions = await Promise.all([1, 2, 3, 4, 5].map(() => limit.decide('k')));
      expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
      ]);
      expect((await scriptCalls(redis)) - before).toBe(1);
      expect(Number(await redis.get('turn:rl:k'))).toBe(5);
      // Another key in the same turn is counted apart.
      const [k, other] = await Promise.all([limit.decide('k'), limit.decide('other')]);
      expect([k.allowed, other.allowed, other.remaining]).toEqual([false, true, 2]);
    } finally {
      redis.disconnect();
      await redisServer.destroy();
    }
  });

  it('the login throttle keys the store by an HMAC, never the address', async () => {
    const window = new MemorySlidingWindow({ limit: 2, windowMs: 60_000 });
    const throttle = new LoginThrottle(window, Buffer.alloc(32, 7));
    await throttle.attempt('someone@example.test');
    const dump = JSON.stringify([...(window as unknown as { attempts: Map<string, number[]> }).attempts.keys()]);
    expect(dump).not.toContain('someone');
    expect((await throttle.attempt('someone@example.test')).allowed).toBe(true);
    expect((await throttle.attempt('someone@example.test')).allowed).toBe(false);
  });
});
