import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { bearer, cookieOf, cookies, cookiesOf, csrf, form, isDeletion, jsonOf, login, register, startServerAt, uniqueEmail } from './helpers.js';

// A sign-out always revokes (README "Endpoints"): the session named by the access token
// or, once the 15-minute auth-token cookie is gone, by the refresh-token cookie — which
// now lives at Path=/api/auth so sign-out receives it. And the move from the old
// Path=/api/auth/refresh: browsers holding a cookie there keep refreshing and lose it.

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

async function newSession() {
  const email = uniqueEmail('out');
  await register(s.url, email);
  return login(s.url, email);
}

const refresh = (cookie: string) => fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookies(cookie) });

async function signOut(...cookiePairs: (string | undefined)[]) {
  const { token, cookie } = await csrf(s.url);
  return fetch(`${s.url}/api/auth/signout`, form({ csrfToken: token, callbackUrl: '/login' }, cookies(cookie, ...cookiePairs)));
}

const sessionAlive = async (accessToken: string) => Boolean(await s.inkwell.auth.sessions.lookup(decodeJwt(accessToken).sid as string));

describe('POST /api/auth/signout without the access token', () => {
  it('revokes the session by its refresh token, as a browser whose auth-token cookie expired sends it', async () => {
    const session = await newSession();
    const control = await newSession();

    // Only what the browser still holds for /api/auth/signout: the CSRF and refresh-token cookies.
    const response = await signOut(session.refreshCookie);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/login');
    for (const cleared of [cookieOf(response, 'auth-token')!, ...cookiesOf(response, 'refresh-token')]) expect(isDeletion(cleared)).toBe(true);

    const refused = await refresh(session.refreshCookie);
    expect(refused.status).toBe(401);
    expect(await jsonOf(refused)).toEqual({ error: expect.any(String) });
    // The session is dead: its access token, though unexpired, no longer works either.
    expect(await sessionAlive(session.accessToken)).toBe(false);
    expect((await fetch(`${s.url}/api/me`, { headers: bearer(session.accessToken) })).status).toBe(401);

    // Control: an untouched session refreshes.
    expect((await refresh(control.refreshCookie)).status).toBe(200);
    expect(await sessionAlive(control.accessToken)).toBe(true);
  });

  it('revokes with a refresh token that was already rotated (it still names its session)', async () => {
    const session = await newSession();
    const rotated = await refresh(session.refreshCookie);
    expect(rotated.status).toBe(200);
    const successor = `refresh-token=${cookieOf(rotated, 'refresh-token')!.value}`;

    expect((await signOut(session.refreshCookie)).status).toBe(302);
    expect((await refresh(successor)).status).toBe(401);
    expect(await sessionAlive(session.accessToken)).toBe(false);
  });

  it('revokes both sessions when the access token and the refresh token name different ones', async () => {
    const a = await newSession();
    const b = await newSession();
    expect((await signOut(a.authCookie, b.refreshCookie)).status).toBe(302);
    expect(await sessionAlive(a.accessToken)).toBe(false);
    expect(await sessionAlive(b.accessToken)).toBe(false);
  });

  it('still needs the CSRF token: without it nothing is revoked', async () => {
    const session = await newSession();
    const { cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/signout`, form({ callbackUrl: '/login' }, cookies(cookie, session.refreshCookie)));
    expect(response.status).toBe(403);
    expect(await sessionAlive(session.accessToken)).toBe(true);
    expect((await refresh(session.refreshCookie)).status).toBe(200);
  });

  it('with an unknown or malformed refresh token: 302, cookies cleared, nothing else happens', async () => {
    const bystander = await newSession();
    for (const value of ['AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', '%E0%A4%A', 'x']) {
      const response = await signOut(`refresh-token=${value}`);
      expect(response.status).toBe(302);
      expect(isDeletion(cookieOf(response, 'refresh-token')!)).toBe(true);
    }
    expect(await sessionAlive(bystander.accessToken)).toBe(true);
  });
});

describe('refresh-token cookies at the old path (/api/auth/refresh)', () => {
  // A browser sends the cookie of the more specific path first (RFC 6265 section 5.4).
  it('a browser holding only the old cookie refreshes, and the answer moves it to /api/auth', async () => {
    const session = await newSession();
    const response = await refresh(session.refreshCookie);
    expect(response.status).toBe(200);
    const set = cookiesOf(response, 'refresh-token');
    expect(set.find((c) => c.attributes['path'] === '/api/auth')?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(isDeletion(set.find((c) => c.attributes['path'] === '/api/auth/refresh')!)).toBe(true);
  });

  it('with both cookies, a dead old one does not hide the live new one', async () => {
    const old = await newSession();
    const current = await newSession();
    expect((await signOut(old.refreshCookie)).status).toBe(302);
    const response = await refresh(`${old.refreshCookie}; ${current.refreshCookie}`);
    expect(response.status).toBe(200);
    const { accessToken } = await jsonOf(response);
    expect(decodeJwt(accessToken).sid).toBe(decodeJwt(current.accessToken).sid);
  });

  it('the same token under both paths rotates once (not reuse)', async () => {
    const session = await newSession();
    const response = await refresh(`${session.refreshCookie}; ${session.refreshCookie}`);
    expect(response.status).toBe(200);
    expect(await sessionAlive(session.accessToken)).toBe(true);
  });

  it('when none works: 401 and both paths cleared', async () => {
    const a = await newSession();
    const b = await newSession();
    expect((await signOut(a.authCookie, b.refreshCookie)).status).toBe(302);
    const response = await refresh(`${a.refreshCookie}; ${b.refreshCookie}`);
    expect(response.status).toBe(401);
    const cleared = cookiesOf(response, 'refresh-token');
    expect(cleared.map((c) => c.attributes['path']).sort()).toEqual(['/api/auth', '/api/auth/refresh']);
    for (const c of cleared) expect(isDeletion(c)).toBe(true);
  });
});
