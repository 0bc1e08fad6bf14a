import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.js';
import { PASSWORD, cookieOf, cookies, csrf, form, isDeletion, json, jsonOf, register, signUpAs, startServerAt, uniqueEmail } from './helpers.js';

// The sign-up page and its form endpoint (POST /register), the sign-in page keeping the
// typed email after a failure, and the home page `/` — over HTTP; the same pages in
// Chromium are in browser.test.ts.

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

/** The hidden CSRF token in a page, with the cookie the page set (or the one sent). */
async function formToken(path: string): Promise<{ token: string; cookie: string; page: string }> {
  const response = await fetch(`${s.url}${path}`);
  const page = await response.text();
  const token = /name="csrfToken" value="([^"]+)"/.exec(page)?.[1];
  const cookie = cookieOf(response, 'csrf-token');
  if (!token || !cookie) throw new Error(`${path}: no CSRF token or cookie`);
  return { token, cookie: `csrf-token=${cookie.value}`, page };
}

async function postRegister(fields: Record<string, string>, cookie?: string) {
  const response = await fetch(`${s.url}/register`, form(fields, cookie ? cookies(cookie) : {}));
  return { response, page: await response.clone().text() };
}

/** The value attribute of a named input, unescaped as a browser would read it. */
function inputValue(page: string, name: string): string | undefined {
  const tag = new RegExp(`<input[^>]*name="${name}"[^>]*>`).exec(page)?.[0];
  const value = tag && /value="([^"]*)"/.exec(tag)?.[1];
  return value?.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#96;/g, '`').replace(/&amp;/g, '&');
}

describe('GET /register', () => {
  it('renders the sign-up form with its CSRF token, and links to the sign-in page', async () => {
    const response = await fetch(`${s.url}/register?callbackUrl=%2Fadmin`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).toContain('<form method="post" action="/register">');
    for (const name of ['name', 'email', 'password', 'csrfToken']) expect(page).toContain(`name="${name}"`);
    expect(page).toContain('name="callbackUrl" value="/admin"');
    expect(page).toContain('href="/login?callbackUrl=%2Fadmin"');
    expect(page).not.toMatch(/<style|<script|style=/i);
    // And the sign-in page links back.
    expect(await (await fetch(`${s.url}/login`)).text()).toContain('href="/register"');
  });

  it('sends a signed-in visitor on to callbackUrl', async () => {
    const person = await signUpAs(s, 'user');
    const response = await fetch(`${s.url}/register`, { headers: cookies(person.authCookie), redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/account');
  });
});

describe('POST /register', () => {
  it('creates the account, signs it in (both cookies) and sends it to /account', async () => {
    const { token, cookie } = await formToken('/register');
    const email = uniqueEmail('signup');
    const { response } = await postRegister({ name: 'Nora New', email: ` ${email.toUpperCase()} `, password: PASSWORD, csrfToken: token, callbackUrl: '/account' }, cookie);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/account');
    const auth = cookieOf(response, 'auth-token')!;
    expect(auth.attributes).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax' });
    expect(cookieOf(response, 'refresh-token')?.attributes).toEqual({ 'max-age': '604800', path: '/api/auth', httponly: true, samesite: 'Strict' });

    const me = await jsonOf(await fetch(`${s.url}/api/me`, { headers: cookies(`auth-token=${auth.value}`) }));
    expect(me.user).toEqual({ id: expect.any(String), name: 'Nora New', email, role: 'user' });
    // The password works for the next sign-in.
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: PASSWORD }))).status).toBe(200);
  });

  it('goes on to a callbackUrl of ours, and to /account for any other', async () => {
    for (const [callbackUrl, location] of [
      ['/admin?tab=2', '/admin?tab=2'],
      ['https://evil.example/', '/account'],
      ['//evil.example', '/account'],
    ] as const) {
      const { token, cookie } = await formToken('/register');
      const { response } = await postRegister({ name: 'C', email: uniqueEmail('cb'), password: PASSWORD, csrfToken: token, callbackUrl }, cookie);
      expect(response.status).toBe(302);
      expect(response.headers.get('location')).toBe(location);
    }
  });

  it('403 for a missing or wrong CSRF token or no cookie: a fresh form, nothing echoed, no account', async () => {
    const { token, cookie } = await formToken('/register');
    const other = await csrf(s.url);
    const email = uniqueEmail('csrf');
    const cases: [Record<string, string>, string | undefined][] = [
      [{}, cookie],
      [{ csrfToken: 'wrong' }, cookie],
      [{ csrfToken: other.token }, cookie],
      [{ csrfToken: token }, undefined],
    ];
    for (const [extra, sent] of cases) {
      const { response, page } = await postRegister({ name: 'Cross Site', email, password: PASSWORD, ...extra }, sent);
      expect(response.status).toBe(403);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(page).toContain('role="alert"');
      expect(page).toContain('expired');
      expect(page).not.toContain(email);
      expect(page).not.toContain('Cross Site');
      expect(cookieOf(response, 'auth-token')).toBeUndefined();
      // A fresh form that works (its token matches the cookie sent, or the new one set).
      expect(inputValue(page, 'csrfToken')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: PASSWORD }))).status).toBe(401);
  });

  it('409 for a taken email: the form again with name and email kept, never the password, and a way to sign in', async () => {
    const email = uniqueEmail('taken');
    await register(s.url, email);
    const { token, cookie } = await formToken('/register');
    const secret = 'a password nobody should see';
    const { response, page } = await postRegister({ name: 'Second Try', email, password: secret, csrfToken: token, callbackUrl: '/account' }, cookie);
    expect(response.status).toBe(409);
    expect(page).toMatch(/role="alert">An account with this email already exists\./);
    expect(page).toContain('<a href="/login">Sign in instead</a>');
    expect(inputValue(page, 'name')).toBe('Second Try');
    expect(inputValue(page, 'email')).toBe(email);
    expect(inputValue(page, 'password')).toBeUndefined();
    expect(page).not.toContain(secret);
    expect(cookieOf(response, 'auth-token')).toBeUndefined();
  });

  it.each([
    ['a short password', { password: '1234567' }, 'Password must be at least 8 characters.'],
    ['a password over 72 bytes', { password: 'a'.repeat(73) }, 'Password must be at most 72 bytes.'],
    ['a malformed email', { email: 'not-an-email' }, 'Email must be a valid email address'],
    ['a missing password', { password: '' }, 'Email and password are required.'],
    ['a name over 100 characters', { name: 'n'.repeat(101) }, 'Name must be 1–100 characters.'],
  ])('400 for %s, with the message and the typed name and email', async (_label, override, message) => {
    const { token, cookie } = await formToken('/register');
    const fields = { name: 'Short Pat', email: uniqueEmail('bad'), password: PASSWORD, csrfToken: token, ...override };
    const { response, page } = await postRegister(fields, cookie);
    expect(response.status).toBe(400);
    expect(/role="alert">([^<]*)/.exec(page)?.[1]).toContain(message);
    expect(inputValue(page, 'name')).toBe(fields.name);
    expect(inputValue(page, 'email')).toBe(fields.email);
    if (fields.password) expect(page).not.toContain(fields.password);
    expect(cookieOf(response, 'auth-token')).toBeUndefined();
  });

  it('escapes what it echoes', async () => {
    const { token, cookie } = await formToken('/register');
    const name = `"><script>alert(1)</script>`;
    const { page } = await postRegister({ name, email: `x"><img src=x>@example.test`, password: 'short', csrfToken: token }, cookie);
    expect(page).not.toContain('<script>alert(1)');
    expect(page).not.toContain('<img src=x>');
    expect(inputValue(page, 'name')).toBe(name);
  });

  it('415 for anything but a form', async () => {
    const response = await fetch(`${s.url}/register`, json({ name: 'J', email: uniqueEmail(), password: PASSWORD }));
    expect(response.status).toBe(415);
  });
});

describe('a failed sign-in keeps the typed email', () => {
  async function failSignIn(email: string) {
    const { token, cookie } = await csrf(s.url);
    return fetch(`${s.url}/api/auth/callback/credentials`, form({ email, password: 'wrong password', csrfToken: token, callbackUrl: '/account' }, cookies(cookie)));
  }

  it('in a one-minute HttpOnly cookie for /login only — not in the URL — shown once, escaped', async () => {
    const email = `Typed.${uniqueEmail('kept')}`;
    const failed = await failSignIn(email);
    expect(failed.status).toBe(302);
    const location = failed.headers.get('location')!;
    expect(location).not.toContain('Typed');
    const kept = cookieOf(failed, 'login-email')!;
    expect(kept.attributes).toEqual({ 'max-age': '60', path: '/login', httponly: true, samesite: 'Lax' });

    const page = await fetch(`${s.url}${location}`, { headers: cookies(`login-email=${kept.value}`) });
    const html = await page.text();
    expect(inputValue(html, 'email')).toBe(email);
    expect(html).toContain('did not match');
    expect(isDeletion(cookieOf(page, 'login-email')!)).toBe(true);
    // Without the cookie the field is empty again.
    expect(inputValue(await (await fetch(`${s.url}${location}`)).text(), 'email')).toBeUndefined();

    const hostile = `"><script>alert(1)</script>@example.test`;
    const again = await failSignIn(hostile);
    const hostilePage = await (await fetch(`${s.url}/login`, { headers: cookies(`login-email=${cookieOf(again, 'login-email')!.value}`) })).text();
    expect(hostilePage).not.toContain('<script>alert(1)');
    expect(inputValue(hostilePage, 'email')).toBe(hostile);
  });

  it('a successful sign-in clears it', async () => {
    const email = uniqueEmail('ok');
    await register(s.url, email);
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email, password: PASSWORD, csrfToken: token }, cookies(cookie)));
    expect(response.status).toBe(302);
    const cleared = cookieOf(response, 'login-email')!;
    expect(isDeletion(cleared)).toBe(true);
    expect(cleared.attributes['path']).toBe('/login');
  });
});

describe('GET /', () => {
  it('links to the pages and to GraphiQL, under the same strict CSP', async () => {
    const response = await fetch(`${s.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    for (const href of ['/login', '/register', '/account', '/admin', '/graphql']) expect(page).toContain(`href="${href}"`);
    expect(page).not.toMatch(/<style|<script|style=/i);
  });

  it('greets a signed-in visitor by name (escaped)', async () => {
    const person = await signUpAs(s, 'user', '<b>Bold</b>');
    const page = await (await fetch(`${s.url}/`, { headers: cookies(person.authCookie) })).text();
    expect(page).toContain('Signed in as &lt;b&gt;Bold&lt;/b&gt;.');
    expect(page).not.toContain('href="/register"');
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

  it('/ does not link to GraphiQL', async () => {
    const page = await (await fetch(`${prod.url}/`)).text();
    expect(page).toContain('href="/register"');
    expect(page).not.toContain('/graphql');
  });
});
