import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import {
  PASSWORD,
  bearer,
  cookieOf,
  cookies,
  cookiesOf,
  csrf,
  form,
  isDeletion,
  json,
  jsonOf,
  login,
  register,
  startServerAt,
  uniqueEmail,
} from './helpers.js';

// docs/accounts.md, endpoint by endpoint: statuses, bodies and every cookie attribute.

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;

describe('POST /api/auth/register', () => {
  it('answers 201 {id, email} with the email normalised', async () => {
    const raw = `  ${uniqueEmail('Mixed').toUpperCase()}  `;
    const response = await fetch(`${s.url}/api/auth/register`, json({ name: 'Ann', email: raw, password: PASSWORD }));
    expect(response.status).toBe(201);
    const body = await jsonOf(response);
    expect(Object.keys(body).sort()).toEqual(['email', 'id']);
    expect(body.email).toBe(raw.trim().toLowerCase());
    expect(typeof body.id).toBe('string');
    // Registration does not sign in.
    expect(response.headers.getSetCookie()).toEqual([]);
  });

  it.each([
    ['missing email', { name: 'A', password: PASSWORD }],
    ['missing password', { name: 'A', email: 'x@example.test' }],
    ['empty body', {}],
    ['password of 7 characters', { email: 'short@example.test', password: '1234567' }],
    ['password over 72 bytes (25 × €, 75 bytes)', { email: 'long@example.test', password: '€'.repeat(25) }],
    ['password of 73 ASCII bytes', { email: 'long2@example.test', password: 'a'.repeat(73) }],
    ['malformed email', { email: 'not-an-email', password: PASSWORD }],
    ['email without domain dot', { email: 'a@localhost', password: PASSWORD }],
    ['email over 254 characters', { email: `${'a'.repeat(64)}@${'b'.repeat(190)}.example`, password: PASSWORD }],
    ['password with NUL', { email: 'nul@example.test', password: 'abcdefgh\u0000ij' }],
    ['name over 100 characters', { name: 'n'.repeat(101), email: 'name@example.test', password: PASSWORD }],
    ['password not a string', { email: 'type@example.test', password: 12345678 }],
  ])('answers 400 {error} for %s', async (_label, body) => {
    const response = await fetch(`${s.url}/api/auth/register`, json(body));
    expect(response.status).toBe(400);
    const payload = await jsonOf(response);
    expect(Object.keys(payload)).toEqual(['error']);
    expect(typeof payload.error).toBe('string');
  });

  it('accepts exactly 8 characters and exactly 72 bytes', async () => {
    for (const password of ['12345678', 'a'.repeat(72), '€'.repeat(24)]) {
      const response = await fetch(`${s.url}/api/auth/register`, json({ email: uniqueEmail('edge'), password }));
      expect(response.status, password).toBe(201);
    }
  });

  it('answers 409 for an email already registered, in any case or spacing', async () => {
    const email = uniqueEmail('dup');
    await register(s.url, email);
    for (const again of [email, email.toUpperCase(), ` ${email} `]) {
      const response = await fetch(`${s.url}/api/auth/register`, json({ name: 'B', email: again, password: PASSWORD }));
      expect(response.status).toBe(409);
      expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
    }
  });

  it('answers 415 for anything but JSON (a cross-site form cannot register)', async () => {
    const response = await fetch(`${s.url}/api/auth/register`, form({ email: uniqueEmail(), password: PASSWORD }));
    expect(response.status).toBe(415);
    expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
  });

  it('answers 400 for a body that is not JSON', async () => {
    const response = await fetch(`${s.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{oops' });
    expect(response.status).toBe(400);
    expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
  });
});

describe('POST /api/auth/login', () => {
  const email = uniqueEmail('login');
  let userId: string;
  beforeAll(async () => {
    userId = (await register(s.url, email, PASSWORD, 'Login Person')).id;
  });

  it('answers 200 {user, accessToken, expiresAt} with both cookies exactly as docs/accounts.md lists them', async () => {
    const response = await fetch(`${s.url}/api/auth/login`, json({ email: email.toUpperCase(), password: PASSWORD }));
    expect(response.status).toBe(200);
    const body = await jsonOf(response);
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'expiresAt', 'user']);
    expect(body.user).toEqual({ id: userId, name: 'Login Person', email, role: 'user' });
    expect(body.expiresAt).toMatch(ISO);
    const lifetime = Date.parse(body.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(14 * 60_000);
    expect(lifetime).toBeLessThanOrEqual(15 * 60_000);

    const auth = cookieOf(response, 'auth-token')!;
    expect(auth.value).toBe(body.accessToken);
    expect(auth.attributes).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax' });
    const refresh = cookieOf(response, 'refresh-token')!;
    expect(refresh.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(refresh.attributes).toEqual({ 'max-age': '604800', path: '/api/auth', httponly: true, samesite: 'Strict' });
    // A refresh-token cookie a browser may keep from the old path is deleted.
    const legacy = cookiesOf(response, 'refresh-token').filter((c) => c.attributes['path'] === '/api/auth/refresh');
    expect(legacy).toHaveLength(1);
    expect(isDeletion(legacy[0]!)).toBe(true);
    // Before the current one: a client keeping cookies by name only keeps the live token.
    expect(cookiesOf(response, 'refresh-token').map((c) => c.attributes['path'])).toEqual(['/api/auth/refresh', '/api/auth']);
    expect(response.headers.get('cache-control')).toBe('private, no-store');
  });

  it('answers 401 with the same body for a wrong password and an unknown email', async () => {
    const wrong = await fetch(`${s.url}/api/auth/login`, json({ email, password: 'wrong password' }));
    const unknown = await fetch(`${s.url}/api/auth/login`, json({ email: uniqueEmail('nobody'), password: PASSWORD }));
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(await jsonOf(wrong)).toEqual({ error: 'Invalid email or password' });
    expect(await jsonOf(unknown)).toEqual({ error: 'Invalid email or password' });
    expect(wrong.headers.getSetCookie()).toEqual([]);
  });

  it('answers 400 without email or password, 415 for a form', async () => {
    expect((await fetch(`${s.url}/api/auth/login`, json({ email }))).status).toBe(400);
    expect((await fetch(`${s.url}/api/auth/login`, json({ password: PASSWORD }))).status).toBe(400);
    expect((await fetch(`${s.url}/api/auth/login`, form({ email, password: PASSWORD }))).status).toBe(415);
  });
});

describe('POST /api/auth/refresh', () => {
  it('answers 200 {accessToken, expiresAt} and replaces both cookies', async () => {
    const email = uniqueEmail('refresh');
    await register(s.url, email);
    const session = await login(s.url, email);
    const response = await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookies(session.refreshCookie) });
    expect(response.status).toBe(200);
    const body = await jsonOf(response);
    expect(Object.keys(body).sort()).toEqual(['accessToken', 'expiresAt']);
    expect(body.expiresAt).toMatch(ISO);
    const auth = cookieOf(response, 'auth-token')!;
    const refresh = cookieOf(response, 'refresh-token')!;
    expect(auth.value).toBe(body.accessToken);
    expect(auth.attributes).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax' });
    expect(refresh.attributes).toEqual({ 'max-age': '604800', path: '/api/auth', httponly: true, samesite: 'Strict' });
    expect(`refresh-token=${refresh.value}`).not.toBe(session.refreshCookie);
    const me = await fetch(`${s.url}/api/me`, { headers: bearer(body.accessToken) });
    expect(me.status).toBe(200);
  });

  it('answers 401 {error} without the cookie, and for an unknown or malformed one', async () => {
    for (const headers of [{}, cookies('refresh-token=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), cookies('refresh-token=%00%01')]) {
      const response = await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers });
      expect(response.status).toBe(401);
      expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
    }
  });

  it('answers 415 for a form body', async () => {
    const response = await fetch(`${s.url}/api/auth/refresh`, form({ a: 'b' }));
    expect(response.status).toBe(415);
  });
});

describe('GET /api/auth/csrf', () => {
  it('answers {csrfToken} and sets the HttpOnly double-submit cookie; a second call keeps the token', async () => {
    const response = await fetch(`${s.url}/api/auth/csrf`);
    expect(response.status).toBe(200);
    const body = await jsonOf(response);
    expect(Object.keys(body)).toEqual(['csrfToken']);
    const cookie = cookieOf(response, 'csrf-token')!;
    expect(cookie.attributes).toEqual({ path: '/', httponly: true, samesite: 'Lax' });
    expect(cookie.value.startsWith(`${body.csrfToken}.`)).toBe(true);

    const again = await fetch(`${s.url}/api/auth/csrf`, { headers: cookies(`csrf-token=${cookie.value}`) });
    expect((await jsonOf(again)).csrfToken).toBe(body.csrfToken);
    expect(cookieOf(again, 'csrf-token')).toBeUndefined();
  });

  it('issues a new token when the cookie was tampered with', async () => {
    const { token, cookie } = await csrf(s.url);
    const tampered = cookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    const response = await fetch(`${s.url}/api/auth/csrf`, { headers: cookies(tampered) });
    expect((await jsonOf(response)).csrfToken).not.toBe(token);
  });
});

describe('GET /api/auth/session and GET /api/me', () => {
  it('session: null when anonymous; {user, expires} when signed in (cookie or bearer)', async () => {
    const anonymous = await fetch(`${s.url}/api/auth/session`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await anonymous.text()).toBe('null');

    const email = uniqueEmail('session');
    const { id } = await register(s.url, email, PASSWORD, 'Sess');
    const session = await login(s.url, email);
    for (const headers of [cookies(session.authCookie), bearer(session.accessToken)]) {
      const response = await fetch(`${s.url}/api/auth/session`, { headers });
      const body = await jsonOf(response);
      expect(body).toEqual({ user: { id, name: 'Sess', email, role: 'user' }, expires: expect.stringMatching(ISO) });
      // The session's absolute end: 30 days after sign-in.
      const days = (Date.parse(body.expires) - Date.now()) / 86_400_000;
      expect(days).toBeGreaterThan(29.9);
      expect(days).toBeLessThanOrEqual(30);
    }
  });

  it('/api/me: 200 {user} with a session, 401 {error} without', async () => {
    const email = uniqueEmail('me');
    const { id } = await register(s.url, email, PASSWORD, 'Me');
    const session = await login(s.url, email);
    const ok = await fetch(`${s.url}/api/me`, { headers: cookies(session.authCookie) });
    expect(ok.status).toBe(200);
    expect(await jsonOf(ok)).toEqual({ user: { id, name: 'Me', email, role: 'user' } });

    const anonymous = await fetch(`${s.url}/api/me`);
    expect(anonymous.status).toBe(401);
    expect(await jsonOf(anonymous)).toEqual({ error: expect.any(String) });
  });
});

describe('GET /api/auth/providers and GET /api/auth/signin', () => {
  it('lists credentials with absolute sign-in and callback URLs', async () => {
    const response = await fetch(`${s.url}/api/auth/providers`);
    expect(await jsonOf(response)).toEqual({
      credentials: {
        id: 'credentials',
        name: 'Credentials',
        type: 'credentials',
        signinUrl: `${s.url}/api/auth/signin`,
        callbackUrl: `${s.url}/api/auth/callback/credentials`,
      },
    });
  });

  it('signin redirects (302) to /login with the same query', async () => {
    const response = await fetch(`${s.url}/api/auth/signin?callbackUrl=%2Faccount&x=1`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/login?callbackUrl=%2Faccount&x=1');
    const bare = await fetch(`${s.url}/api/auth/signin`, { redirect: 'manual' });
    expect(bare.headers.get('location')).toBe('/login');
  });
});

describe('POST /api/auth/callback/credentials', () => {
  const email = uniqueEmail('form');
  beforeAll(async () => {
    await register(s.url, email);
  });

  it('302 to callbackUrl with both cookies on success', async () => {
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(
      `${s.url}/api/auth/callback/credentials`,
      form({ email, password: PASSWORD, csrfToken: token, callbackUrl: '/account?tab=1' }, cookies(cookie)),
    );
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/account?tab=1');
    expect(cookieOf(response, 'auth-token')?.attributes).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax' });
    expect(cookieOf(response, 'refresh-token')?.attributes['path']).toBe('/api/auth');
  });

  it('302 back to the sign-in page with ?error=CredentialsSignin on a wrong password or unknown email', async () => {
    for (const [e, p] of [
      [email, 'wrong password'],
      [uniqueEmail('ghost'), PASSWORD],
      [email, ''],
    ] as const) {
      const { token, cookie } = await csrf(s.url);
      const response = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email: e, password: p, csrfToken: token, callbackUrl: '/account' }, cookies(cookie)));
      expect(response.status).toBe(302);
      const location = new URL(response.headers.get('location')!, s.url);
      expect(location.pathname).toBe('/login');
      expect(location.searchParams.get('error')).toBe('CredentialsSignin');
      expect(location.searchParams.get('callbackUrl')).toBe('/account');
      expect(cookieOf(response, 'auth-token')).toBeUndefined();
    }
  });

  it('403 without a CSRF token, with a wrong one, with a tampered cookie, or with no cookie', async () => {
    const { token, cookie } = await csrf(s.url);
    const other = await csrf(s.url);
    const cases: [Record<string, string>, Record<string, string>][] = [
      [{ email, password: PASSWORD }, cookies(cookie)],
      [{ email, password: PASSWORD, csrfToken: 'wrong' }, cookies(cookie)],
      [{ email, password: PASSWORD, csrfToken: other.token }, cookies(cookie)],
      [{ email, password: PASSWORD, csrfToken: token }, {}],
      [{ email, password: PASSWORD, csrfToken: token }, cookies(cookie.slice(0, -2))],
      // A forged pair: the attacker's own token in a cookie without our signature.
      [{ email, password: PASSWORD, csrfToken: 'attacker' }, cookies('csrf-token=attacker.c2lnbmF0dXJl')],
    ];
    for (const [fields, headers] of cases) {
      const response = await fetch(`${s.url}/api/auth/callback/credentials`, form(fields, headers));
      expect(response.status).toBe(403);
      expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
      expect(cookieOf(response, 'auth-token')).toBeUndefined();
    }
  });
});

describe('POST /api/auth/signout', () => {
  it('clears both cookies, revokes the session and redirects (302) to callbackUrl', async () => {
    const email = uniqueEmail('out');
    await register(s.url, email);
    const session = await login(s.url, email);
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/signout`, form({ csrfToken: token, callbackUrl: '/login' }, cookies(cookie, session.authCookie)));
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/login');
    const auth = cookieOf(response, 'auth-token')!;
    const refresh = cookieOf(response, 'refresh-token')!;
    expect(auth.value).toBe('');
    expect(auth.attributes['path']).toBe('/');
    expect(refresh.attributes['path']).toBe('/api/auth');
    for (const c of [auth, ...cookiesOf(response, 'refresh-token')]) expect(isDeletion(c)).toBe(true);
    expect(cookiesOf(response, 'refresh-token').map((c) => c.attributes['path']).sort()).toEqual(['/api/auth', '/api/auth/refresh']);

    // The session is gone: the access token (still unexpired) and the refresh token stop working.
    expect((await fetch(`${s.url}/api/me`, { headers: bearer(session.accessToken) })).status).toBe(401);
    expect((await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookies(session.refreshCookie) })).status).toBe(401);
  });

  it('accepts JSON with csrfToken, and a bearer token naming the session', async () => {
    const email = uniqueEmail('outjson');
    await register(s.url, email);
    const session = await login(s.url, email);
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/signout`, {
      ...json({ csrfToken: token, callbackUrl: '/login' }, { ...cookies(cookie), ...bearer(session.accessToken) }),
      redirect: 'manual',
    });
    expect(response.status).toBe(302);
    expect((await fetch(`${s.url}/api/me`, { headers: bearer(session.accessToken) })).status).toBe(401);
  });

  it('403 without or with a wrong CSRF token, and the session survives', async () => {
    const email = uniqueEmail('outcsrf');
    await register(s.url, email);
    const session = await login(s.url, email);
    const { cookie } = await csrf(s.url);
    for (const fields of [{}, { csrfToken: 'nope' }] as Record<string, string>[]) {
      const response = await fetch(`${s.url}/api/auth/signout`, form(fields, cookies(cookie, session.authCookie)));
      expect(response.status).toBe(403);
    }
    expect((await fetch(`${s.url}/api/me`, { headers: bearer(session.accessToken) })).status).toBe(200);
  });
});

describe('the account area in general', () => {
  it('answers unknown /api/auth paths with 404 {error}', async () => {
    const response = await fetch(`${s.url}/api/auth/does-not-exist`);
    expect(response.status).toBe(404);
    expect(await jsonOf(response)).toEqual({ error: 'Not found' });
  });

  it('sends security headers with a strict Content-Security-Policy', async () => {
    const response = await fetch(`${s.url}/login`);
    const csp = response.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('x-frame-options')).toBe('SAMEORIGIN');
  });
});

describe('in production', () => {
  let prod: TestServer;
  beforeAll(async () => {
    prod = await startServerAt({ NODE_ENV: 'production', BCRYPT_COST: '10' });
  });
  afterAll(async () => {
    await prod?.close();
  });

  it('marks every cookie Secure and names the CSRF cookie __Host-', async () => {
    const email = uniqueEmail('prod');
    await register(prod.url, email);
    const response = await fetch(`${prod.url}/api/auth/login`, json({ email, password: PASSWORD }));
    expect(response.status).toBe(200);
    expect(cookieOf(response, 'auth-token')?.attributes).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax', secure: true });
    expect(cookieOf(response, 'refresh-token')?.attributes).toEqual({
      'max-age': '604800',
      path: '/api/auth',
      httponly: true,
      samesite: 'Strict',
      secure: true,
    });
    const csrfResponse = await fetch(`${prod.url}/api/auth/csrf`);
    expect(cookieOf(csrfResponse, '__Host-csrf-token')?.attributes).toEqual({ path: '/', httponly: true, samesite: 'Lax', secure: true });
    expect(csrfResponse.headers.get('strict-transport-security')).toMatch(/max-age=31536000/);
  });
});
