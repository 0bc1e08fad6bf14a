import { SignJWT, base64url, decodeJwt, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET, type TestServer, withoutCost } from '../helpers/server.js';
import { bearer, cookies, jsonOf, login, signUpAs, startServerAt, uniqueEmail, register, PASSWORD } from './helpers.js';

// Access tokens over the wire: anything but a valid, live token is refused — /api/me
// answers 401 with the RFC 6750 `invalid_token` challenge — and never grants anything
// (GraphQL's `me` is not the user, whatever /graphql answers: its 401 is tested there).

let s: TestServer;
let session: Awaited<ReturnType<typeof signUpAs>>;
let claims: { sub: string; sid: string; role: string; iss: string; aud: string };

beforeAll(async () => {
  s = await startServerAt();
  session = await signUpAs(s, 'user', 'Token Tester');
  claims = decodeJwt(session.accessToken) as typeof claims;
});
afterAll(async () => {
  await s?.close();
});

const key = new TextEncoder().encode(TEST_SECRET);
const now = () => Math.floor(Date.now() / 1000);

/** A token like ours, with any claim, header or key changed. */
async function craft(
  overrides: { payload?: Record<string, unknown>; header?: Record<string, unknown>; key?: Uint8Array; exp?: number; iat?: number } = {},
): Promise<string> {
  const payload = { role: claims.role, sid: claims.sid, sub: claims.sub, iss: claims.iss, aud: claims.aud, ...overrides.payload };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete (payload as Record<string, unknown>)[k];
  return new SignJWT(payload)
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', ...overrides.header } as { alg: string })
    .setIssuedAt(overrides.iat ?? now())
    .setExpirationTime(overrides.exp ?? now() + 600)
    .sign(overrides.key ?? key);
}

/** What each transport says about a token: /api/me's status and challenge, and GraphQL's `me`. */
async function whoIs(headers: Record<string, string>) {
  const me = await fetch(`${s.url}/api/me`, { headers });
  const gql = await s.gql('{ me { id role } }', {}, { headers });
  return { meStatus: me.status, challenge: me.headers.get('www-authenticate'), gqlMe: gql.body.data?.me ?? null };
}

const REFUSED = { meStatus: 401, challenge: 'Bearer error="invalid_token"', gqlMe: null };

function unsigned(header: Record<string, unknown>, payload: Record<string, unknown>, signature = ''): string {
  const enc = (o: unknown) => base64url.encode(JSON.stringify(o));
  return `${enc(header)}.${enc(payload)}.${signature}`;
}

describe('a valid access token', () => {
  it('identifies the caller by bearer header and by cookie', async () => {
    for (const headers of [bearer(session.accessToken), cookies(session.authCookie)]) {
      expect(await whoIs(headers)).toEqual({ meStatus: 200, challenge: null, gqlMe: { id: session.userId, role: 'user' } });
    }
  });

  it('carries sub, role, sid, iat, exp, iss, aud and lives 15 minutes, signed HS256', async () => {
    const c = decodeJwt(session.accessToken);
    expect(Object.keys(c).sort()).toEqual(['aud', 'exp', 'iat', 'iss', 'role', 'sid', 'sub']);
    expect(c.sub).toBe(session.userId);
    expect(c.iss).toBe(s.url);
    expect(c.exp! - c.iat!).toBe(900);
    const header = JSON.parse(Buffer.from(session.accessToken.split('.')[0]!, 'base64url').toString());
    expect(header).toEqual({ alg: 'HS256', typ: 'at+jwt' });
  });

  it('works when crafted exactly like ours (control for the cases below)', async () => {
    expect((await whoIs(bearer(await craft()))).meStatus).toBe(200);
  });
});

describe('a token that must not work is refused and grants nothing', () => {

  const cases: [string, () => Promise<string>][] = [
    ['signed with another secret (forged)', () => craft({ key: new TextEncoder().encode('another-secret-that-is-32-bytes-long!!') })],
    ['expired', () => craft({ iat: now() - 3600, exp: now() - 60 })],
    ['expired one second ago (no clock tolerance)', () => craft({ iat: now() - 901, exp: now() - 1 })],
    ['HS512 with the right secret (algorithm not pinned)', () => craft({ header: { alg: 'HS512' } })],
    ['HS384 with the right secret', () => craft({ header: { alg: 'HS384' } })],
    [
      'RS256 with a key of its own',
      async () => {
        const { privateKey } = await generateKeyPair('RS256');
        return new SignJWT({ role: 'admin', sid: claims.sid, sub: claims.sub, iss: claims.iss, aud: claims.aud })
          .setProtectedHeader({ alg: 'RS256', typ: 'at+jwt' })
          .setIssuedAt()
          .setExpirationTime('10m')
          .sign(privateKey);
      },
    ],
    ['alg none without signature', async () => unsigned({ alg: 'none', typ: 'at+jwt' }, { ...claims, iat: now(), exp: now() + 600 })],
    ['alg none with the real signature', async () => unsigned({ alg: 'none', typ: 'at+jwt' }, { ...claims, iat: now(), exp: now() + 600 }, session.accessToken.split('.')[2])],
    ['alg "None" in other case', async () => unsigned({ alg: 'None' }, { ...claims, iat: now(), exp: now() + 600 })],
    ['of another issuer', () => craft({ payload: { iss: 'https://evil.example' } })],
    ['for another audience', () => craft({ payload: { aud: 'someone-else' } })],
    ['of another type (typ: JWT)', () => craft({ header: { typ: 'JWT' } })],
    ['without sid', () => craft({ payload: { sid: undefined } })],
    ['naming a session that does not exist', () => craft({ payload: { sid: 'no-such-session' } })],
    ['with an unknown role', () => craft({ payload: { role: 'superuser' } })],
    [
      'with the payload altered (role: admin) and the old signature',
      async () => {
        const [h, , sig] = session.accessToken.split('.');
        const payload = { ...decodeJwt(session.accessToken), role: 'admin' };
        return `${h}.${base64url.encode(JSON.stringify(payload))}.${sig}`;
      },
    ],
    // The first signature character: the last one carries padding bits a decoder may ignore.
    [
      'with one signature character changed',
      async () => {
        const at = session.accessToken.lastIndexOf('.') + 1;
        const c = session.accessToken[at];
        return session.accessToken.slice(0, at) + (c === 'A' ? 'B' : 'A') + session.accessToken.slice(at + 1);
      },
    ],
    ['truncated', async () => session.accessToken.slice(0, -10)],
    ['that is not a JWT at all', async () => 'not-a-token'],
  ];

  it.each(cases)('%s — by bearer header', async (_label, make) => {
    const token = await make();
    expect(await whoIs(bearer(token))).toEqual(REFUSED);
  });

  it.each(cases)('%s — by cookie', async (_label, make) => {
    const token = await make();
    expect(await whoIs(cookies(`auth-token=${token}`))).toEqual(REFUSED);
  });

  it('an empty bearer token is refused; an empty cookie (what a cleared one leaves) is no credential', async () => {
    expect(await whoIs({ authorization: 'Bearer' })).toEqual(REFUSED);
    expect(await whoIs(cookies('auth-token='))).toEqual({ meStatus: 401, challenge: 'Bearer', gqlMe: null });
  });

  it('a session of one user with the sub of another (admin) is refused', async () => {
    const admin = await signUpAs(s, 'admin', 'Real Admin');
    const token = await craft({ payload: { sub: admin.userId, role: 'admin' } });
    expect(await whoIs(bearer(token))).toEqual(REFUSED);
  });

  it('a present Authorization header wins over the cookie, even when it is invalid', async () => {
    const headers = { ...cookies(session.authCookie), authorization: 'Bearer nonsense' };
    expect(await whoIs(headers)).toEqual(REFUSED);
    const basic = { ...cookies(session.authCookie), authorization: `Basic ${Buffer.from('a:b').toString('base64')}` };
    expect(await whoIs(basic)).toEqual(REFUSED);
  });

  it('/graphql refuses it with 401 UNAUTHENTICATED and the invalid_token challenge, running nothing', async () => {
    const response = await s.gql('mutation { addBook(title: "T", author: "A") { id } }', {}, { headers: bearer(await craft({ header: { alg: 'HS512' } })) });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(response.body).not.toHaveProperty('data');
    expect(response.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
  });
});

describe('the caller is re-read on every request', () => {
  it('a role change takes effect on the next request, with the same token', async () => {
    const person = await signUpAs(s, 'user', 'Climber');
    const create = () => s.gql('mutation($a: ID!) { createPost(title: "Hello", authorId: $a) { id } }', { a: person.userId }, { headers: bearer(person.accessToken) });
    expect((await create()).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    await s.inkwell.services.users.setRole(person.email, 'editor');
    const promoted = await create();
    expect(promoted.body.errors).toBeUndefined();
    expect((await whoIs(bearer(person.accessToken))).gqlMe).toEqual({ id: person.userId, role: 'editor' });

    await s.inkwell.services.users.setRole(person.email, 'user');
    expect((await create()).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it("the token's role claim grants nothing: a demoted admin loses manage:users at once", async () => {
    const admin = await signUpAs(s, 'admin', 'Soon Demoted');
    const createUser = () =>
      s.gql('mutation($e: String!) { createUser(name: "N", email: $e) { id } }', { e: uniqueEmail('made') }, { headers: bearer(admin.accessToken) });
    expect((await createUser()).body.errors).toBeUndefined();
    await s.inkwell.services.users.setRole(admin.email, 'user');
    expect(decodeJwt(admin.accessToken).role).toBe('admin');
    expect((await createUser()).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  it('deleteUser of oneself revokes every session at once', async () => {
    const email = uniqueEmail('leaver');
    const { id } = await register(s.url, email);
    const a = await login(s.url, email);
    const b = await login(s.url, email);
    const deleted = await s.gql('mutation($id: ID!) { deleteUser(id: $id) }', { id }, { headers: bearer(a.accessToken) });
    expect(withoutCost(deleted.body)).toEqual({ data: { deleteUser: true } });
    for (const other of [a, b]) {
      expect(await whoIs(bearer(other.accessToken))).toEqual(REFUSED);
      expect((await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookies(other.refreshCookie) })).status).toBe(401);
    }
    // And the account is gone for good: its password no longer signs in.
    expect((await fetch(`${s.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: PASSWORD }) })).status).toBe(401);
  });

  it("an admin's deleteUser revokes the deleted user's sessions at once", async () => {
    const admin = await signUpAs(s, 'admin');
    const victim = await signUpAs(s, 'editor');
    expect((await whoIs(bearer(victim.accessToken))).meStatus).toBe(200);
    const deleted = await s.gql('mutation($id: ID!) { deleteUser(id: $id) }', { id: victim.userId }, { headers: bearer(admin.accessToken) });
    expect(deleted.body.data).toEqual({ deleteUser: true });
    expect((await whoIs(bearer(victim.accessToken))).meStatus).toBe(401);
    const response = await fetch(`${s.url}/api/auth/session`, { headers: bearer(victim.accessToken) });
    expect(response.status).toBe(401);
    expect(await jsonOf(response)).toEqual({ error: expect.any(String) });
  });
});
