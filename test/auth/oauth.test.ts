import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlowSealer } from '../../src/auth/oauth/flow.js';
import { githubProfile, oidcProfile } from '../../src/auth/oauth/profile.js';
import { channels } from '../../src/realtime/pubsub.js';
import { startTestIdp, type TestIdp } from '../helpers/oidc-provider.js';
import type { TestServer } from '../helpers/server.js';
import { PASSWORD, cookieOf, cookies, form, freePort, jsonOf, login, parseSetCookie, register, startServerAt, uniqueEmail } from './helpers.js';

// External sign-in against a real OpenID Connect provider (oidc-provider on loopback):
// authorization code flow with PKCE S256, state and nonce, driven without a browser.

/** A browser's cookie store for one origin. */
class Jar {
  private readonly values = new Map<string, string>();
  store(response: Response): void {
    for (const raw of response.headers.getSetCookie()) {
      const c = parseSetCookie(raw);
      if (c.value === '' || c.attributes['max-age'] === '0') this.values.delete(c.name);
      else this.values.set(c.name, c.value);
    }
  }
  get(name: string): string | undefined {
    return this.values.get(name);
  }
  set(name: string, value: string): void {
    this.values.set(name, value);
  }
  header(): Record<string, string> {
    return this.values.size === 0 ? {} : { cookie: [...this.values].map(([k, v]) => `${k}=${v}`).join('; ') };
  }
}

let idp: TestIdp;
let s: TestServer;

beforeAll(async () => {
  const port = await freePort();
  idp = await startTestIdp({ redirectUris: [`http://127.0.0.1:${port}/api/auth/callback/testidp`] });
  s = await startServerAt(
    { OAUTH_TESTIDP_ISSUER: idp.issuer, OAUTH_TESTIDP_CLIENT_ID: idp.clientId, OAUTH_TESTIDP_CLIENT_SECRET: idp.clientSecret },
    port,
  );
});
afterAll(async () => {
  await s?.close();
  await idp?.close();
});

interface Begun {
  jar: Jar;
  authorizationUrl: URL;
  /** Where the provider sent the browser back to (our callback, with code and state). */
  callback: URL;
}

/** Starts a sign-in at Inkwell and lets the provider sign `account` in; stops before our callback. */
async function begin(account: string, callbackUrl = '/account'): Promise<Begun> {
  const jar = new Jar();
  const csrfResponse = await fetch(`${s.url}/api/auth/csrf`);
  jar.store(csrfResponse);
  const { csrfToken } = await jsonOf(csrfResponse);
  const start = await fetch(`${s.url}/api/auth/signin/testidp`, form({ csrfToken, callbackUrl }, jar.header()));
  expect(start.status).toBe(302);
  jar.store(start);
  const authorizationUrl = new URL(start.headers.get('location')!);

  idp.loginAs(account);
  const idpJar = new Jar();
  let url = authorizationUrl;
  for (let hops = 0; url.origin === idp.issuer; hops++) {
    if (hops > 10) throw new Error('too many redirects at the provider');
    const response = await fetch(url, { redirect: 'manual', headers: idpJar.header() });
    idpJar.store(response);
    const location = response.headers.get('location');
    if (!location) throw new Error(`the provider answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
    url = new URL(location, url);
  }
  return { jar, authorizationUrl, callback: url };
}

async function finish(begun: Begun, callback: URL = begun.callback) {
  const response = await fetch(callback, { redirect: 'manual', headers: begun.jar.header() });
  begun.jar.store(response);
  return response;
}

const errorOf = (response: Response) => new URL(response.headers.get('location')!, s.url).searchParams.get('error');

async function me(jar: Jar) {
  const response = await fetch(`${s.url}/api/me`, { headers: jar.header() });
  return response.status === 200 ? (await jsonOf(response)).user : null;
}

async function userCount(): Promise<number> {
  const row = await s.inkwell.backends.db.kysely.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('the provider list and the start of the flow', () => {
  it('lists the provider from the environment', async () => {
    const providers = await jsonOf(await fetch(`${s.url}/api/auth/providers`));
    expect(providers.testidp).toEqual({
      id: 'testidp',
      name: 'Testidp',
      type: 'oidc',
      signinUrl: `${s.url}/api/auth/signin/testidp`,
      callbackUrl: `${s.url}/api/auth/callback/testidp`,
    });
  });

  it('redirects to the authorization endpoint with PKCE S256, state and nonce, and sets the flow cookie', async () => {
    const { token, cookie } = await (async () => {
      const r = await fetch(`${s.url}/api/auth/csrf`);
      return { token: (await jsonOf(r)).csrfToken as string, cookie: `csrf-token=${cookieOf(r, 'csrf-token')!.value}` };
    })();
    const response = await fetch(`${s.url}/api/auth/signin/testidp`, form({ csrfToken: token, callbackUrl: '/account' }, cookies(cookie)));
    expect(response.status).toBe(302);
    const url = new URL(response.headers.get('location')!);
    expect(url.origin).toBe(idp.issuer);
    const p = url.searchParams;
    expect(p.get('response_type')).toBe('code');
    expect(p.get('client_id')).toBe(idp.clientId);
    expect(p.get('redirect_uri')).toBe(`${s.url}/api/auth/callback/testidp`);
    expect(p.get('scope')).toBe('openid email profile');
    expect(p.get('code_challenge_method')).toBe('S256');
    expect(p.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(p.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(p.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const flow = cookieOf(response, 'oauth-flow')!;
    expect(flow.attributes).toEqual({ 'max-age': '600', path: '/api/auth/callback/testidp', httponly: true, samesite: 'Lax' });
    // The cookie is encrypted: neither the state nor the verifier can be read from it.
    expect(flow.value).not.toContain(p.get('state')!);
  });

  it('403 without the CSRF token; 404 for an unknown provider', async () => {
    const missing = await fetch(`${s.url}/api/auth/signin/testidp`, form({ callbackUrl: '/account' }));
    expect(missing.status).toBe(403);
    const r = await fetch(`${s.url}/api/auth/csrf`);
    const token = (await jsonOf(r)).csrfToken as string;
    const unknown = await fetch(`${s.url}/api/auth/signin/nope`, form({ csrfToken: token }, cookies(`csrf-token=${cookieOf(r, 'csrf-token')!.value}`)));
    expect(unknown.status).toBe(404);
    expect(await jsonOf(unknown)).toEqual({ error: 'Unknown provider' });
    expect((await fetch(`${s.url}/api/auth/callback/nope?code=x&state=y`, { redirect: 'manual' })).status).toBe(404);
  });
});

describe('the full flow', () => {
  it('creates the user on the first sign-in (publishing userCreated), and finds the same user on the second', async () => {
    idp.setAccount('acct-new', { email: 'New.Person@Example.test', emailVerified: true, name: 'New Person' });
    const events = s.inkwell.backends.pubsub.subscribe<{ id: string; email: string | null }>(channels.userCreated());
    const nextEvent = events.next();
    const before = await userCount();

    const first = await begin('acct-new', '/account?welcome=1');
    expect(first.callback.pathname).toBe('/api/auth/callback/testidp');
    const response = await finish(first);
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/account?welcome=1');
    expect(cookieOf(response, 'auth-token')?.attributes).toEqual({ 'max-age': '900', path: '/', httponly: true, samesite: 'Lax' });
    expect(cookieOf(response, 'refresh-token')?.attributes['path']).toBe('/api/auth');
    // The flow cookie is spent.
    expect(cookieOf(response, 'oauth-flow')?.value).toBe('');

    const user = await me(first.jar);
    expect(user).toEqual({ id: expect.any(String), name: 'New Person', email: 'new.person@example.test', role: 'user' });
    expect(await userCount()).toBe(before + 1);
    const event = (await nextEvent) as IteratorResult<{ id: string }>;
    expect(event.value.id).toBe(user.id);
    await events.return?.();

    const second = await begin('acct-new');
    expect((await finish(second)).status).toBe(302);
    expect((await me(second.jar))?.id).toBe(user.id);
    expect(await userCount()).toBe(before + 1);
  });

  it('links to an existing account when the provider says the email is verified', async () => {
    const email = uniqueEmail('linked');
    const { id } = await register(s.url, email);
    await s.inkwell.services.users.setRole(email, 'editor');
    idp.setAccount('acct-verified', { email: email.toUpperCase(), emailVerified: true, name: 'Someone' });
    const begun = await begin('acct-verified');
    expect((await finish(begun)).headers.get('location')).toBe('/account');
    expect(await me(begun.jar)).toEqual({ id, name: 'Test User', email, role: 'editor' });
    // The password still works too.
    expect((await login(s.url, email, PASSWORD)).userId).toBe(id);
  });

  it('does not link an unverified email to an existing account', async () => {
    const email = uniqueEmail('victim');
    const { id } = await register(s.url, email);
    idp.setAccount('acct-attacker', { email, emailVerified: false, name: 'Attacker' });
    const before = await userCount();
    const begun = await begin('acct-attacker');
    const response = await finish(begun);
    expect(response.status).toBe(302);
    expect(errorOf(response)).toBe('OAuthAccountNotLinked');
    expect(cookieOf(response, 'auth-token')).toBeUndefined();
    expect(await me(begun.jar)).toBeNull();
    const links = await s.inkwell.backends.db.kysely.selectFrom('oauth_accounts').selectAll().where('user_id', '=', id).execute();
    expect(links).toEqual([]);
    expect(await userCount()).toBe(before);
  });

  it('creates an account without the email when it is unverified and unknown (no squatting)', async () => {
    const email = uniqueEmail('unverified');
    idp.setAccount('acct-unverified', { email, emailVerified: false, name: 'Unverified' });
    const begun = await begin('acct-unverified');
    expect((await finish(begun)).headers.get('location')).toBe('/account');
    expect(await me(begun.jar)).toMatchObject({ name: 'Unverified', email: null });
    // The address stays free for its owner.
    expect((await register(s.url, email)).email).toBe(email);
  });

  it('a foreign callbackUrl is replaced by /', async () => {
    idp.setAccount('acct-redirect', { email: uniqueEmail('redirect'), emailVerified: true });
    const begun = await begin('acct-redirect', 'https://evil.example/steal');
    expect((await finish(begun)).headers.get('location')).toBe('/');
  });
});

describe('refused callbacks', () => {
  it('a tampered state', async () => {
    idp.setAccount('acct-state', { email: uniqueEmail('state'), emailVerified: true });
    const begun = await begin('acct-state');
    const tampered = new URL(begun.callback);
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
    const response = await finish(begun, tampered);
    expect(response.status).toBe(302);
    expect(errorOf(response)).toBe('OAuthCallback');
    expect(cookieOf(response, 'auth-token')).toBeUndefined();
  });

  it('a replayed code (with the flow cookie kept from the first time)', async () => {
    idp.setAccount('acct-replay', { email: uniqueEmail('replay'), emailVerified: true });
    const begun = await begin('acct-replay');
    const flowCookie = begun.jar.get('oauth-flow')!;
    expect((await finish(begun)).headers.get('location')).toBe('/account');

    const attacker = new Jar();
    attacker.set('oauth-flow', flowCookie);
    const replay = await fetch(begun.callback, { redirect: 'manual', headers: attacker.header() });
    expect(replay.status).toBe(302);
    expect(errorOf(replay)).toBe('OAuthCallback');
    expect(cookieOf(replay, 'auth-token')).toBeUndefined();
    expect(idp.grantErrors).toContain('invalid_grant');
  });

  it('a callback without the flow cookie (login CSRF), or with a forged one', async () => {
    idp.setAccount('acct-cookie', { email: uniqueEmail('cookie'), emailVerified: true });
    const begun = await begin('acct-cookie');
    const noCookie = await fetch(begun.callback, { redirect: 'manual' });
    expect(errorOf(noCookie)).toBe('OAuthCallback');

    const forged = await new FlowSealer(new Uint8Array(32).fill(1)).seal({
      provider: 'testidp',
      state: begun.callback.searchParams.get('state')!,
      codeVerifier: 'x'.repeat(43),
      nonce: 'n',
      callbackUrl: '/',
    });
    const withForged = await fetch(begun.callback, { redirect: 'manual', headers: cookies(`oauth-flow=${forged}`) });
    expect(errorOf(withForged)).toBe('OAuthCallback');
    expect(cookieOf(withForged, 'auth-token')).toBeUndefined();
  });

  it('an error from the provider', async () => {
    idp.setAccount('acct-denied', { email: uniqueEmail('denied'), emailVerified: true });
    const begun = await begin('acct-denied');
    const denied = new URL(begun.callback.pathname, s.url);
    denied.searchParams.set('error', 'access_denied');
    denied.searchParams.set('state', begun.callback.searchParams.get('state')!);
    const response = await finish(begun, denied);
    expect(errorOf(response)).toBe('AccessDenied');
  });

  it('a provider that cannot be reached: back to the sign-in page, not a 500', async () => {
    const dead = await startServerAt({ OAUTH_DEAD_ISSUER: 'http://127.0.0.1:9', OAUTH_DEAD_CLIENT_ID: 'x', OAUTH_DEAD_CLIENT_SECRET: 'y' });
    try {
      const r = await fetch(`${dead.url}/api/auth/csrf`);
      const token = (await jsonOf(r)).csrfToken as string;
      const response = await fetch(`${dead.url}/api/auth/signin/dead`, form({ csrfToken: token, callbackUrl: '/account' }, cookies(`csrf-token=${cookieOf(r, 'csrf-token')!.value}`)));
      expect(response.status).toBe(302);
      expect(new URL(response.headers.get('location')!, dead.url).searchParams.get('error')).toBe('OAuthSignin');
    } finally {
      await dead.close();
    }
  });
});

describe('profiles', () => {
  it('OIDC: verified only when the provider says so; names from several claims', () => {
    expect(oidcProfile('g', { sub: '1', email: 'a@b.io', email_verified: true, name: 'A' })).toEqual({
      provider: 'g',
      accountId: '1',
      email: 'a@b.io',
      emailVerified: true,
      name: 'A',
    });
    expect(oidcProfile('g', { sub: '1', email: 'a@b.io', email_verified: 'true', given_name: 'Ann', family_name: 'Lee' })).toMatchObject({ emailVerified: true, name: 'Ann Lee' });
    expect(oidcProfile('g', { sub: '1', email: 'a@b.io' })).toMatchObject({ emailVerified: false });
    expect(oidcProfile('g', { sub: '1', email_verified: true })).toMatchObject({ email: null, emailVerified: false });
    expect(() => oidcProfile('g', { email: 'a@b.io' })).toThrow();
  });

  it('GitHub: the primary email, verified only when GitHub says so', () => {
    const emails = [
      { email: 'other@b.io', primary: false, verified: true },
      { email: 'main@b.io', primary: true, verified: true },
    ];
    expect(githubProfile({ id: 42, login: 'octo', name: null }, emails)).toEqual({
      provider: 'github',
      accountId: '42',
      email: 'main@b.io',
      emailVerified: true,
      name: 'octo',
    });
    expect(githubProfile({ id: 42, login: 'octo' }, [{ email: 'main@b.io', primary: true, verified: false }])).toMatchObject({ emailVerified: false });
    expect(githubProfile({ id: 42, login: 'octo' }, [])).toMatchObject({ email: null, emailVerified: false });
    expect(() => githubProfile({ login: 'octo' }, [])).toThrow();
  });
});
