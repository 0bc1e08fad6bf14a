import { SignJWT, decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET, type TestServer } from '../helpers/server.js';
import {
  PASSWORD,
  bearer,
  cookieOf,
  cookies,
  csrf,
  form,
  isDeletion,
  json,
  jsonOf,
  login,
  register,
  signUpAs,
  startServerAt,
  uniqueEmail,
} from './helpers.js';

// A credential that is present but not valid is refused, not anonymous (README "Tokens,
// cookies and lifetimes"): the resolver marks it `rejected`; /api/me and
// /api/auth/session answer 401 with `WWW-Authenticate: Bearer error="invalid_token"` and
// clear an auth-token cookie; pages clear the cookie and treat the visitor as signed out;
// the endpoints a client uses to get a fresh token work whatever its old one is.

let s: TestServer;
let live: Awaited<ReturnType<typeof signUpAs>>;
const bad: Record<string, string> = {};

beforeAll(async () => {
  s = await startServerAt();
  live = await signUpAs(s, 'user', 'Live Person');
  // Forged and expired tokens name a live session of their own (sign-out may end it).
  const claims = decodeJwt((await signUpAs(s, 'user', 'Expiring Person')).accessToken);
  const now = Math.floor(Date.now() / 1000);
  const sign = (key: string, iat: number, exp: number) =>
    new SignJWT({ role: claims.role, sid: claims.sid })
      .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
      .setSubject(claims.sub!)
      .setIssuer(claims.iss!)
      .setAudience(claims.aud!)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(key));
  bad.malformed = 'not-a-token';
  bad.forged = await sign('another-secret-that-is-32-bytes-long!!', now, now + 600);
  bad.expired = await sign(TEST_SECRET, now - 1000, now - 100);

  const revoked = await signUpAs(s, 'user');
  const { token, cookie } = await csrf(s.url);
  const out = await fetch(`${s.url}/api/auth/signout`, form({ csrfToken: token }, cookies(cookie, revoked.authCookie)));
  expect(out.status).toBe(302);
  bad.revoked = revoked.accessToken;

  const leaver = await signUpAs(s, 'user');
  const deleted = await s.gql('mutation($id: ID!) { deleteUser(id: $id) }', { id: leaver.userId }, { headers: bearer(leaver.accessToken) });
  expect(deleted.body.data).toEqual({ deleteUser: true });
  bad['of a deleted user'] = leaver.accessToken;
});
afterAll(async () => {
  await s?.close();
});

const KINDS = ['malformed', 'forged', 'expired', 'revoked', 'of a deleted user'];
const CHALLENGE = 'Bearer error="invalid_token"';

describe('the caller resolver reports a refused credential', () => {
  it.each(KINDS)('%s: rejected, with where it came from, and anonymous', async (kind) => {
    const { callers } = s.inkwell.auth;
    expect(await callers.fromHeaders(bearer(bad[kind]!))).toEqual({ caller: { kind: 'anonymous' }, source: 'header', rejected: true });
    expect(await callers.fromHeaders(cookies(`auth-token=${bad[kind]}`))).toEqual({ caller: { kind: 'anonymous' }, source: 'cookie', rejected: true });
    expect(await callers.fromToken(bad[kind], 'cookie')).toEqual({ caller: { kind: 'anonymous' }, source: 'cookie', rejected: true });
  });

  it('no credential is plain anonymous; a valid one is the user, with its source', async () => {
    const { callers } = s.inkwell.auth;
    for (const headers of [{}, cookies('other=1'), cookies('auth-token='), { authorization: '' }, { authorization: '   ' }]) {
      expect(await callers.fromHeaders(headers)).toEqual({ caller: { kind: 'anonymous' } });
    }
    expect(await callers.fromToken(undefined)).toEqual({ caller: { kind: 'anonymous' } });
    const signedIn = await callers.fromHeaders(cookies('x=1', live.authCookie));
    expect(signedIn).toMatchObject({ caller: { kind: 'user', id: live.userId, role: 'user' }, source: 'cookie' });
    expect(signedIn.rejected).toBeUndefined();
    expect((await callers.fromToken(live.accessToken)).source).toBe('header');
  });

  it('an Authorization header decides alone: another scheme or a bad bearer is refused, even beside a valid cookie', async () => {
    const { callers } = s.inkwell.auth;
    for (const authorization of ['Basic YTpi', 'Bearer', 'Bearer a b', 'Token x', `Bearer ${bad.forged}`]) {
      expect(await callers.fromHeaders({ authorization, ...cookies(live.authCookie) })).toEqual({ caller: { kind: 'anonymous' }, source: 'header', rejected: true });
    }
    // A blank header presents nothing: the cookie counts.
    expect((await callers.fromHeaders({ authorization: '', ...cookies(live.authCookie) })).caller.kind).toBe('user');
  });

  it('an auth-token cookie that is not valid percent-encoding is refused', async () => {
    expect(await s.inkwell.auth.callers.fromHeaders(cookies('auth-token=%E0%A4%A'))).toEqual({ caller: { kind: 'anonymous' }, source: 'cookie', rejected: true });
  });
});

describe.each(['/api/me', '/api/auth/session'])('%s with a refused access token', (path) => {
  it.each(KINDS)('%s, as a bearer token: 401 {error} with the invalid_token challenge; no cookie touched', async (kind) => {
    const response = await fetch(`${s.url}${path}`, { headers: bearer(bad[kind]!) });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(CHALLENGE);
    expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
    expect(response.headers.getSetCookie()).toEqual([]);
  });

  it.each(KINDS)('%s, as the auth-token cookie: 401, and the cookie is cleared (the refresh token is kept)', async (kind) => {
    const response = await fetch(`${s.url}${path}`, { headers: cookies(`auth-token=${bad[kind]}`, live.refreshCookie) });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe(CHALLENGE);
    expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
    const cleared = cookieOf(response, 'auth-token')!;
    expect(isDeletion(cleared)).toBe(true);
    expect(cleared.attributes['path']).toBe('/');
    expect(cookieOf(response, 'refresh-token')).toBeUndefined();
  });
});

describe('without any credential', () => {
  it('/api/me: 401 with the bare Bearer challenge; /api/auth/session: null', async () => {
    const me = await fetch(`${s.url}/api/me`);
    expect(me.status).toBe(401);
    expect(me.headers.get('www-authenticate')).toBe('Bearer');
    const session = await fetch(`${s.url}/api/auth/session`);
    expect(session.status).toBe(200);
    expect(await session.text()).toBe('null');
  });
});

describe('endpoints that give a client a fresh start work with a stale auth-token cookie', () => {
  const stale = () => `auth-token=${bad.expired}`;

  it('register, login, csrf, providers and signin', async () => {
    const email = uniqueEmail('stale');
    expect((await fetch(`${s.url}/api/auth/register`, json({ email, password: PASSWORD }, cookies(stale())))).status).toBe(201);
    const signedIn = await fetch(`${s.url}/api/auth/login`, json({ email, password: PASSWORD }, cookies(stale())));
    expect(signedIn.status).toBe(200);
    expect(cookieOf(signedIn, 'auth-token')?.value).toBe((await jsonOf(signedIn)).accessToken);
    expect((await fetch(`${s.url}/api/auth/csrf`, { headers: cookies(stale()) })).status).toBe(200);
    expect((await fetch(`${s.url}/api/auth/providers`, { headers: cookies(stale()) })).status).toBe(200);
    expect((await fetch(`${s.url}/api/auth/signin`, { headers: cookies(stale()), redirect: 'manual' })).status).toBe(302);
  });

  it('refresh', async () => {
    const session = await login(s.url, live.email);
    const response = await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookies(stale(), session.refreshCookie) });
    expect(response.status).toBe(200);
    const { accessToken } = await jsonOf(response);
    expect((await fetch(`${s.url}/api/me`, { headers: bearer(accessToken) })).status).toBe(200);
  });

  it('the sign-in form and sign-out', async () => {
    const email = uniqueEmail('staleform');
    await register(s.url, email);
    const { token, cookie } = await csrf(s.url);
    const signIn = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email, password: PASSWORD, csrfToken: token, callbackUrl: '/account' }, cookies(cookie, stale())));
    expect(signIn.status).toBe(302);
    expect(signIn.headers.get('location')).toBe('/account');
    expect(cookieOf(signIn, 'auth-token')?.value).not.toBe('');
    // Forged, not expired: sign-out would end the session an expired (but genuine) token names.
    const signOut = await fetch(`${s.url}/api/auth/signout`, form({ csrfToken: token, callbackUrl: '/' }, cookies(cookie, `auth-token=${bad.forged}`)));
    expect(signOut.status).toBe(302);
  });
});

describe('pages with a refused auth-token cookie: signed out, and the cookie cleared', () => {
  it.each([
    ['/account', '/login?callbackUrl=%2Faccount'],
    ['/admin', '/login?callbackUrl=%2Fadmin'],
  ])('%s redirects to %s', async (path, location) => {
    for (const kind of KINDS) {
      const response = await fetch(`${s.url}${path}`, { headers: cookies(`auth-token=${bad[kind]}`), redirect: 'manual' });
      expect(response.status, kind).toBe(302);
      expect(response.headers.get('location')).toBe(location);
      expect(isDeletion(cookieOf(response, 'auth-token')!)).toBe(true);
    }
  });

  it.each(['/', '/login', '/register', '/unauthorized'])('%s renders for a signed-out visitor', async (path) => {
    const response = await fetch(`${s.url}${path}`, { headers: cookies(`auth-token=${bad.revoked}`), redirect: 'manual' });
    expect([200, 403]).toContain(response.status);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(isDeletion(cookieOf(response, 'auth-token')!)).toBe(true);
    expect(await response.text()).toContain('href="/login"');
  });

  it('a valid cookie is left alone', async () => {
    const response = await fetch(`${s.url}/account`, { headers: cookies(live.authCookie) });
    expect(response.status).toBe(200);
    expect(cookieOf(response, 'auth-token')).toBeUndefined();
  });
});
