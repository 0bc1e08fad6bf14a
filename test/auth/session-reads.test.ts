import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { query } from '../helpers/postgres.js';
import type { TestServer } from '../helpers/server.js';
import { bearer, csrf, form, cookies, login, register, signUpAs, startServerAt, uniqueEmail } from './helpers.js';
import { withoutCost } from '../helpers/server.js';

// A signed-in request's session is remembered on SQLite instead of read every time
// (src/cache/session-memo.ts); it must still end at once whoever ends it: a sign-out, a
// deleted account, or another process writing to the same database (the operator
// command, a second instance on the file, an administrator's SQL). Run on both backends:
// on PostgreSQL + Redis the session is read every time and the same must hold.

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

/** SQL run by another connection, as another process would. */
async function elsewhere(text: string, values: unknown[]): Promise<void> {
  const database = s.inkwell.config.database;
  if (database.kind === 'postgres') {
    let n = 0;
    await query(database.url, text.replace(/\?/g, () => `$${++n}`), values);
    return;
  }
  const other = new SQLite(database.file);
  try {
    other.pragma('busy_timeout = 5000');
    other.prepare(text).run(...values);
  } finally {
    other.close();
  }
}

const ME = '{ me { id role } }';

async function me(token: string) {
  return s.gql(ME, undefined, { headers: bearer(token) });
}

async function warmSession() {
  const email = uniqueEmail('memo');
  await register(s.url, email);
  const session = await login(s.url, email);
  // Several requests, so the lookup is remembered if it ever is.
  for (let i = 0; i < 3; i++) expect((await me(session.accessToken)).body.data.me.id).toBe(session.userId);
  return { ...session, email };
}

const sessionIdOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).sid as string;

describe('a remembered session', () => {
  it('is refused at once when another process revokes it', async () => {
    const session = await warmSession();
    const control = await warmSession();
    await elsewhere('update sessions set revoked_at = ? where id = ?', [new Date().toISOString(), sessionIdOf(session.accessToken)]);
    const refused = await me(session.accessToken);
    expect(refused.status).toBe(401);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect((await me(control.accessToken)).body.data.me.id).toBe(control.userId);
  });

  it('acts with a role another process set, from the next request on', async () => {
    const author = await signUpAs(s, 'editor');
    const create = 'mutation ($me: ID!) { createPost(title: "Draft", content: "Not yet.", authorId: $me, published: false) { id } }';
    const draft = await s.gql(create, { me: author.userId }, { headers: bearer(author.accessToken) });
    const read = 'query ($id: ID!) { post(id: $id) { id } }';
    const variables = { id: draft.body.data.createPost.id };
    const session = await warmSession();
    // As a user, someone else's draft does not exist; as an editor it does (docs/permissions.md).
    expect((await s.gql(read, variables, { headers: bearer(session.accessToken) })).body.data.post).toBeNull();
    await elsewhere('update users set role = ? where id = ?', ['editor', session.userId]);
    expect((await me(session.accessToken)).body.data.me.role).toBe('editor');
    expect((await s.gql(read, variables, { headers: bearer(session.accessToken) })).body.data.post).toEqual(variables);
  });

  it('is refused at once after another process deletes it', async () => {
    const session = await warmSession();
    await elsewhere('delete from refresh_tokens where session_id = ?', [sessionIdOf(session.accessToken)]);
    await elsewhere('delete from sessions where id = ?', [sessionIdOf(session.accessToken)]);
    expect((await me(session.accessToken)).status).toBe(401);
  });

  it('is refused at once after sign-out, and after its account is deleted', async () => {
    const signedOut = await warmSession();
    const pair = await csrf(s.url);
    const out = await fetch(`${s.url}/api/auth/signout`, form({ csrfToken: pair.token, callbackUrl: '/login' }, cookies(pair.cookie, signedOut.authCookie)));
    expect(out.status).toBe(302);
    expect((await me(signedOut.accessToken)).status).toBe(401);

    const deleted = await warmSession();
    const admin = await signUpAs(s, 'admin');
    const removal = await s.gql('mutation ($id: ID!) { deleteUser(id: $id) }', { id: deleted.userId }, { headers: bearer(admin.accessToken) });
    expect(withoutCost(removal.body)).toEqual({ data: { deleteUser: true } });
    expect((await me(deleted.accessToken)).status).toBe(401);
  });

  it('reads the new name after the user renames themself', async () => {
    const session = await warmSession();
    const renamed = await s.gql('mutation ($id: ID!) { updateUser(id: $id, name: "Renamed") { name } }', { id: session.userId }, { headers: bearer(session.accessToken) });
    expect(withoutCost(renamed.body)).toEqual({ data: { updateUser: { name: 'Renamed' } } });
    const account = await fetch(`${s.url}/api/auth/session`, { headers: bearer(session.accessToken) });
    expect(((await account.json()) as { user: { name: string } }).user.name).toBe('Renamed');
  });

  it('concurrent requests of different callers each act as their own caller', async () => {
    // Their session reads may share one statement (src/db/shared-batch.ts).
    const sessions = await Promise.all(Array.from({ length: 6 }, async () => {
      const email = uniqueEmail('together');
      await register(s.url, email);
      return login(s.url, email);
    }));
    const answers = await Promise.all(sessions.map((session) => me(session.accessToken)));
    expect(answers.map((a) => a.body.data.me.id)).toEqual(sessions.map((session) => session.userId));
  });
});
