import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/auth/sessions.js';
import type { TestServer } from '../helpers/server.js';
import { bearer, cookieOf, cookies, jsonOf, login, register, signUpAs, sleep, startServerAt, uniqueEmail, type Session } from './helpers.js';

// Refresh tokens (docs/accounts.md, RFC 9700 §4.14): rotated on every use, reuse of a
// rotated token revokes the whole session, racing refreshes do not sign anyone out.

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

const db = () => s.inkwell.backends.db.kysely;

async function refresh(refreshCookie: string) {
  const response = await fetch(`${s.url}/api/auth/refresh`, { method: 'POST', headers: cookies(refreshCookie) });
  const next = cookieOf(response, 'refresh-token');
  return {
    status: response.status,
    body: await jsonOf(response),
    refreshCookie: next && next.value ? `refresh-token=${next.value}` : undefined,
    cleared: next !== undefined && next.value === '',
  };
}

async function fresh(): Promise<Session> {
  const email = uniqueEmail('rt');
  await register(s.url, email);
  return login(s.url, email);
}

const meStatus = async (token: string) => (await fetch(`${s.url}/api/me`, { headers: bearer(token) })).status;

describe('rotation', () => {
  it('every refresh returns a new refresh token and a working access token', async () => {
    const start = await fresh();
    let current = start.refreshCookie;
    const seen = new Set([current]);
    for (let i = 0; i < 3; i++) {
      const next = await refresh(current);
      expect(next.status).toBe(200);
      expect(next.refreshCookie).toBeDefined();
      expect(seen.has(next.refreshCookie!)).toBe(false);
      seen.add(next.refreshCookie!);
      expect(await meStatus(next.body.accessToken)).toBe(200);
      current = next.refreshCookie!;
    }
  });

  it('stores refresh tokens only as SHA-256 hashes', async () => {
    const start = await fresh();
    const token = start.refreshCookie.slice('refresh-token='.length);
    const next = await refresh(start.refreshCookie);
    const nextToken = next.refreshCookie!.slice('refresh-token='.length);
    const rows = await db().selectFrom('refresh_tokens').selectAll().execute();
    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(token);
    expect(dump).not.toContain(nextToken);
    expect(rows.map((r) => r.token_hash)).toEqual(expect.arrayContaining([hashToken(token), hashToken(nextToken)]));
  });

  it('the new access token carries the current role', async () => {
    const person = await signUpAs(s, 'user');
    await s.inkwell.services.users.setRole(person.email, 'editor');
    const next = await refresh(person.refreshCookie);
    expect(decodeJwt(next.body.accessToken).role).toBe('editor');
  });

  it('refreshing never extends the session', async () => {
    const start = await fresh();
    const before = await jsonOf(await fetch(`${s.url}/api/auth/session`, { headers: bearer(start.accessToken) }));
    await sleep(5);
    const next = await refresh(start.refreshCookie);
    const after = await jsonOf(await fetch(`${s.url}/api/auth/session`, { headers: bearer(next.body.accessToken) }));
    expect(after.expires).toBe(before.expires);
  });
});

describe('reuse detection', () => {
  it('presenting a rotated token after its successor was used revokes the session: the newest token dies too', async () => {
    const start = await fresh();
    const r1 = await refresh(start.refreshCookie);
    const r2 = await refresh(r1.refreshCookie!);
    expect(r2.status).toBe(200);

    // A thief replays the first token.
    const replay = await refresh(start.refreshCookie);
    expect(replay.status).toBe(401);
    expect(replay.body).toEqual({ error: expect.any(String) });
    expect(replay.cleared).toBe(true);

    // Everything of that session is dead: the newest refresh token and every access token.
    expect((await refresh(r2.refreshCookie!)).status).toBe(401);
    expect(await meStatus(r2.body.accessToken)).toBe(401);
    expect(await meStatus(start.accessToken)).toBe(401);
    const row = await db().selectFrom('sessions').select('revoked_at').where('id', '=', decodeJwt(start.accessToken).sid as string).executeTakeFirst();
    expect(row?.revoked_at).not.toBeNull();
  });

  it('a rotated token presented again after the grace window revokes the session', async () => {
    const start = await fresh();
    const r1 = await refresh(start.refreshCookie);
    expect(r1.status).toBe(200);
    await sleep(2_100);
    expect((await refresh(start.refreshCookie)).status).toBe(401);
    expect((await refresh(r1.refreshCookie!)).status).toBe(401);
    expect(await meStatus(r1.body.accessToken)).toBe(401);
  });

  it('other sessions of the same user are not affected', async () => {
    const email = uniqueEmail('two');
    await register(s.url, email);
    const phone = await login(s.url, email);
    const laptop = await login(s.url, email);
    const r1 = await refresh(phone.refreshCookie);
    await refresh(r1.refreshCookie!);
    expect((await refresh(phone.refreshCookie)).status).toBe(401);
    expect(await meStatus(laptop.accessToken)).toBe(200);
    expect((await refresh(laptop.refreshCookie)).status).toBe(200);
  });
});

describe('racing refreshes', () => {
  it('eight refreshes with one token at the same moment all succeed with the same successor, and the session lives on', async () => {
    const start = await fresh();
    const results = await Promise.all(Array.from({ length: 8 }, () => refresh(start.refreshCookie)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    const successors = new Set(results.map((r) => r.refreshCookie));
    expect(successors.size).toBe(1);
    const [successor] = [...successors];
    // Whichever response the browser kept, its cookie works, and the family goes on.
    const next = await refresh(successor!);
    expect(next.status).toBe(200);
    expect(await meStatus(next.body.accessToken)).toBe(200);
    // Exactly one live token in the family.
    const sid = decodeJwt(start.accessToken).sid as string;
    const live = await db().selectFrom('refresh_tokens').select('token_hash').where('session_id', '=', sid).where('rotated_at', 'is', null).execute();
    expect(live).toHaveLength(1);
  });

  it('a late duplicate within the window (the second tab) gets the same successor, not a sign-out', async () => {
    const start = await fresh();
    const first = await refresh(start.refreshCookie);
    await sleep(300);
    const second = await refresh(start.refreshCookie);
    expect(second.status).toBe(200);
    expect(second.refreshCookie).toBe(first.refreshCookie);
    expect((await refresh(first.refreshCookie!)).status).toBe(200);
  });
});

describe('lifetimes', () => {
  it('an expired refresh token answers 401 (7 days)', async () => {
    const start = await fresh();
    const hash = hashToken(start.refreshCookie.slice('refresh-token='.length));
    const row = await db().selectFrom('refresh_tokens').select(['created_at', 'expires_at']).where('token_hash', '=', hash).executeTakeFirstOrThrow();
    expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).toBe(7 * 86_400_000);
    await db().updateTable('refresh_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('token_hash', '=', hash).execute();
    expect((await refresh(start.refreshCookie)).status).toBe(401);
  });

  it('a session ends after 30 days whatever its tokens say: refresh and access tokens stop', async () => {
    const start = await fresh();
    const sid = decodeJwt(start.accessToken).sid as string;
    const row = await db().selectFrom('sessions').select(['created_at', 'expires_at']).where('id', '=', sid).executeTakeFirstOrThrow();
    expect(Date.parse(row.expires_at) - Date.parse(row.created_at)).toBe(30 * 86_400_000);
    await db().updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', sid).execute();
    expect((await refresh(start.refreshCookie)).status).toBe(401);
    expect(await meStatus(start.accessToken)).toBe(401);
  });

  it('near the end of a session, new tokens do not outlive it', async () => {
    const start = await fresh();
    const sid = decodeJwt(start.accessToken).sid as string;
    const end = new Date(Date.now() + 60_000);
    await db().updateTable('sessions').set({ expires_at: end.toISOString() }).where('id', '=', sid).execute();
    const next = await refresh(start.refreshCookie);
    expect(next.status).toBe(200);
    expect(decodeJwt(next.body.accessToken).exp).toBeLessThanOrEqual(Math.floor(end.getTime() / 1000));
    const hash = hashToken(next.refreshCookie!.slice('refresh-token='.length));
    const token = await db().selectFrom('refresh_tokens').select('expires_at').where('token_hash', '=', hash).executeTakeFirstOrThrow();
    expect(Date.parse(token.expires_at)).toBeLessThanOrEqual(end.getTime());
  });

  it('a revoked session refuses its refresh token', async () => {
    const start = await fresh();
    const sid = decodeJwt(start.accessToken).sid as string;
    await s.inkwell.auth.sessions.revoke(sid);
    const result = await refresh(start.refreshCookie);
    expect(result.status).toBe(401);
    expect(result.cleared).toBe(true);
  });
});
