import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safeCallbackUrl } from '../../src/auth/callback-url.js';
import { escapeHtml, html } from '../../src/auth/pages/html.js';
import type { TestServer } from '../helpers/server.js';
import { PASSWORD, cookieOf, cookies, csrf, form, login, register, signUpAs, startServerAt, uniqueEmail } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

const ORIGIN = 'https://inkwell.example';

describe('callbackUrl: our origin only', () => {
  it.each([
    ['/account', '/account'],
    ['/account?tab=1#top', '/account?tab=1#top'],
    [`${ORIGIN}/admin`, '/admin'],
    [`${ORIGIN.toUpperCase()}/admin`, '/admin'],
    ['account', '/account'],
    ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
    // Same scheme as the base: a relative reference (URL standard), so a path of ours.
    ['https:evil.example', '/evil.example'],
  ])('%j → %j', (value, expected) => {
    expect(safeCallbackUrl(value, ORIGIN)).toBe(expected);
  });

  it.each([
    'https://evil.example',
    'https://evil.example/account',
    '//evil.example',
    '//evil.example/account',
    '/\\evil.example',
    '\\\\evil.example',
    '\\/evil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    ' //evil.example',
    '/..//evil.example',
    '/./..//evil.example',
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'http:evil.example',
    'http://inkwell.example/account',
    'https://inkwell.example:444/account',
    'https://inkwell.example.evil.example/',
    'https://inkwell.example@evil.example/',
    'https://user:pass@inkwell.example/account',
    `/${'a'.repeat(2100)}`,
    '',
  ])('%j falls back', (value) => {
    expect(safeCallbackUrl(value, ORIGIN)).toBe('/');
    expect(safeCallbackUrl(value, ORIGIN, '/account')).toBe('/account');
  });

  it('non-strings fall back', () => {
    for (const value of [undefined, null, 42, ['/a'], { url: '/a' }]) expect(safeCallbackUrl(value, ORIGIN)).toBe('/');
  });
});

describe('callbackUrl over the wire', () => {
  const evil = ['https://evil.example/', '//evil.example', '/\\evil.example', '/..//evil.example', 'javascript:alert(1)'];

  it.each(evil)('sign-in with callbackUrl=%j lands on /', async (callbackUrl) => {
    const email = uniqueEmail('redir');
    await register(s.url, email);
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email, password: PASSWORD, csrfToken: token, callbackUrl }, cookies(cookie)));
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/');
  });

  it.each(evil)('a failed sign-in with callbackUrl=%j keeps / in the sign-in page link', async (callbackUrl) => {
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email: 'x@example.test', password: 'wrong', csrfToken: token, callbackUrl }, cookies(cookie)));
    const location = new URL(response.headers.get('location')!, s.url);
    expect(location.origin).toBe(s.url);
    expect(location.searchParams.get('callbackUrl')).toBe('/');
  });

  it.each(evil)('sign-out with callbackUrl=%j lands on /', async (callbackUrl) => {
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/signout`, form({ csrfToken: token, callbackUrl }, cookies(cookie)));
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/');
  });

  it('an absolute URL of our own origin is followed as a path', async () => {
    const { token, cookie } = await csrf(s.url);
    const response = await fetch(`${s.url}/api/auth/signout`, form({ csrfToken: token, callbackUrl: `${s.url}/login?x=1` }, cookies(cookie)));
    expect(response.headers.get('location')).toBe('/login?x=1');
  });

  it('the sign-in page never puts a foreign callbackUrl in its form, and a signed-in visitor is sent on safely', async () => {
    const page = await (await fetch(`${s.url}/login?callbackUrl=${encodeURIComponent('https://evil.example/')}`)).text();
    expect(page).not.toContain('evil.example');
    expect(page).toContain('name="callbackUrl" value="/account"');

    const person = await signUpAs(s, 'user');
    const response = await fetch(`${s.url}/login?callbackUrl=${encodeURIComponent('//evil.example')}`, { headers: cookies(person.authCookie), redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/account');
  });
});

describe('pages', () => {
  it('/login: the form, its CSRF token and cookie, which work together', async () => {
    const response = await fetch(`${s.url}/login?callbackUrl=%2Fadmin`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const page = await response.text();
    expect(page).toContain('action="/api/auth/callback/credentials"');
    expect(page).toContain('name="callbackUrl" value="/admin"');
    const token = /name="csrfToken" value="([^"]+)"/.exec(page)?.[1];
    const cookie = cookieOf(response, 'csrf-token');
    expect(token).toBeDefined();
    const email = uniqueEmail('page');
    await register(s.url, email);
    const signIn = await fetch(`${s.url}/api/auth/callback/credentials`, form({ email, password: PASSWORD, csrfToken: token!, callbackUrl: '/admin' }, cookies(`csrf-token=${cookie!.value}`)));
    expect(signIn.status).toBe(302);
    expect(signIn.headers.get('location')).toBe('/admin');
  });

  it('/login shows known errors in its own words and never reflects the query', async () => {
    const known = await (await fetch(`${s.url}/login?error=CredentialsSignin`)).text();
    expect(known).toContain('role="alert"');
    const unknown = await (await fetch(`${s.url}/login?error=${encodeURIComponent('<script>alert(1)</script>')}`)).text();
    expect(unknown).toContain('Sign-in failed');
    expect(unknown).not.toContain('<script>alert(1)');
    expect(unknown).not.toContain('&lt;script&gt;alert(1)');
  });

  it.each([
    ['/account', '/login?callbackUrl=%2Faccount'],
    ['/admin', '/login?callbackUrl=%2Fadmin'],
    ['/admin?page=2', '/login?callbackUrl=%2Fadmin%3Fpage%3D2'],
  ])('%s sends an anonymous visitor to %s', async (path, location) => {
    const response = await fetch(`${s.url}${path}`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(location);
  });

  it.each(['user', 'editor'] as const)('/admin sends a signed-in %s to /unauthorized', async (role) => {
    const person = await signUpAs(s, role);
    const response = await fetch(`${s.url}/admin`, { headers: cookies(person.authCookie), redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/unauthorized');
    const account = await fetch(`${s.url}/account`, { headers: cookies(person.authCookie) });
    expect(account.status).toBe(200);
  });

  it('/admin lists users with their roles for an admin; /unauthorized is a 403 page', async () => {
    const admin = await signUpAs(s, 'admin', 'Page Admin');
    const editor = await signUpAs(s, 'editor', 'Page Editor');
    const page = await (await fetch(`${s.url}/admin`, { headers: cookies(admin.authCookie) })).text();
    expect(page).toContain(editor.email);
    expect(page).toMatch(/Page Editor<\/td><td>[^<]+<\/td><td><span class="badge editor">editor<\/span>/);
    const unauthorized = await fetch(`${s.url}/unauthorized`);
    expect(unauthorized.status).toBe(403);
    expect(await unauthorized.text()).toContain('Not allowed');
  });

  it('escapes user-supplied values on every page', async () => {
    const name = `<script>alert("x")</script> & 'quotes' \`tick\``;
    const victim = uniqueEmail('xss');
    await register(s.url, victim, PASSWORD, name);
    const session = await login(s.url, victim);
    const admin = await signUpAs(s, 'admin');
    for (const [path, cookie] of [
      ['/account', session.authCookie],
      ['/admin', admin.authCookie],
    ] as const) {
      const page = await (await fetch(`${s.url}${path}`, { headers: cookies(cookie) })).text();
      expect(page).not.toContain('<script>');
      expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39; &#96;tick&#96;');
    }
  });

  it('serves its stylesheet from our origin; no inline styles or scripts on the pages', async () => {
    const css = await fetch(`${s.url}/assets/inkwell.css`);
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');
    const admin = await signUpAs(s, 'admin');
    for (const path of ['/login', '/account', '/admin', '/unauthorized']) {
      const page = await (await fetch(`${s.url}${path}`, { headers: cookies(admin.authCookie) })).text();
      expect(page).not.toMatch(/<style|<script|style=/i);
    }
  });
});

describe('the HTML helper', () => {
  it('escapes interpolations and keeps nested fragments', () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&\`</a>`)).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&#96;&lt;/a&gt;');
    const inner = html`<b>${'<i>'}</b>`;
    expect(html`<p>${inner}${['<', html`<br>`]}${null}${undefined}${false}${0}</p>`.value).toBe('<p><b>&lt;i&gt;</b>&lt;<br>0</p>');
  });
});
