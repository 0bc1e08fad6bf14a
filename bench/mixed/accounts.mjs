/**
 * The signed-in side of the mixed bench: passwords for a pool of seeded users (plus one
 * draft post each, so visibility rules have something to hide), their access tokens
 * from Inkwell's own POST /api/auth/login, and the session rows copied into the
 * reference's copy of the database so the same tokens are live there too.
 * Works on SQLite files and PostgreSQL databases alike (`target`: { kind, file | url }).
 */
import { copyFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import bcrypt from 'bcrypt';
import SQLite from 'better-sqlite3';
import pg from 'pg';

export const PASSWORD = 'bench mixed password';
/** Access tokens live 15 minutes; get new ones well before. */
const TOKEN_MAX_AGE_MS = 10 * 60 * 1000;

/** One connection to a bench database; `sql(text, params)` with `?` placeholders returns rows. */
async function open(target) {
  if (target.kind === 'sqlite') {
    const db = new SQLite(target.file);
    db.pragma('busy_timeout = 5000');
    return {
      sql: async (text, params = []) => {
        const statement = db.prepare(text);
        return statement.reader ? statement.all(...params) : (statement.run(...params), []);
      },
      close: async () => db.close(),
    };
  }
  const client = new pg.Client({ connectionString: target.url });
  client.on('error', () => {});
  await client.connect();
  return {
    sql: async (text, params = []) => {
      let n = 0;
      return (await client.query(text.replace(/\?/g, () => `$${++n}`), params)).rows;
    },
    close: () => client.end(),
  };
}

async function withDb(target, fn) {
  const db = await open(target);
  try {
    return await fn(db.sql);
  } finally {
    await db.close();
  }
}

/**
 * Gives seeded users bench0…bench<count-1>@inkwell.test a password (bcrypt cost 10, as
 * the bench's BCRYPT_COST) and the first `drafts` of them (all by default) one newer
 * unpublished post each. Run before any service starts. Returns
 * { accounts: [{ email, password, userId }], draftIds }.
 */
export async function prepareAccounts(target, { count, drafts = count }) {
  const hash = await bcrypt.hash(PASSWORD, 10);
  return withDb(target, async (sql) => {
    const accounts = [];
    const draftIds = [];
    const at = Date.parse('2024-07-01T00:00:00.000Z');
    for (let u = 0; u < count; u++) {
      const email = `bench${u}@inkwell.test`;
      await sql('update users set password_hash = ? where email = ?', [hash, email]);
      const [user] = await sql('select id from users where email = ?', [email]);
      if (!user) throw new Error(`no seeded user ${email}: the pool is larger than the seeded users`);
      accounts.push({ email, password: PASSWORD, userId: user.id });
      if (u >= drafts) continue;
      const id = randomUUID();
      const created = new Date(at + u * 1000).toISOString();
      await sql(
        `insert into posts (id, author_id, title, content, published, tags, created_at, updated_at)
         values (?, ?, ?, ?, 0, null, ?, ?)`,
        [id, user.id, `Draft by user ${u}`, 'Not published yet.', created, created],
      );
      draftIds.push(id);
    }
    return { accounts, draftIds };
  });
}

/**
 * Makes seeded users bench<from>…bench<from+count-1>@inkwell.test editors (role
 * `editor`: write:posts, docs/permissions.md) with a password: the writers of createPost
 * and updatePost, on their own posts. Their seeded posts stay published and are read by
 * the mix like everyone's. Run before any service starts. Returns
 * [{ email, password, userId, postIds }] (postIds: their own posts, for updatePost).
 */
export async function prepareEditors(target, { count, from }) {
  const hash = await bcrypt.hash(PASSWORD, 10);
  return withDb(target, async (sql) => {
    const editors = [];
    for (let i = 0; i < count; i++) {
      const email = `bench${from + i}@inkwell.test`;
      await sql(`update users set password_hash = ?, role = 'editor' where email = ?`, [hash, email]);
      const [user] = await sql('select id from users where email = ?', [email]);
      if (!user) throw new Error(`no seeded user ${email}: readers and editors need more seeded users`);
      const posts = await sql('select id from posts where author_id = ? order by created_at desc, id desc', [user.id]);
      editors.push({ email, password: PASSWORD, userId: user.id, postIds: posts.map((p) => p.id) });
    }
    return editors;
  });
}

/** A copy of a SQLite file with no service running on it (its WAL checkpointed first). */
export function copySqliteDatabase(file, copy) {
  const db = new SQLite(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  copyFileSync(file, copy);
}

/** Copies the sessions `from` has and `to` lacks (the users are the same in both copies). */
export async function mirrorSessions(from, to) {
  const sessions = await withDb(from, (sql) => sql('select id, user_id, created_at, expires_at, revoked_at from sessions'));
  await withDb(to, async (sql) => {
    for (const s of sessions) {
      await sql(
        `insert into sessions (id, user_id, created_at, expires_at, revoked_at) values (?, ?, ?, ?, ?)
         on conflict (id) do nothing`,
        [s.id, s.user_id, s.created_at, s.expires_at, s.revoked_at],
      );
    }
  });
}

/** How many reactions and posts a copy holds: the writes grow each copy at its own server's rate. */
export async function rowCounts(target) {
  const [row] = await withDb(target, (sql) => sql('select (select count(*) from reactions) as reactions, (select count(*) from posts) as posts'));
  return { reactions: Number(row.reactions), posts: Number(row.posts) };
}

/** Ends a session in each database, as sign-out does. */
export async function revokeSession(targets, sessionId) {
  for (const target of targets) {
    await withDb(target, (sql) => sql('update sessions set revoked_at = ? where id = ?', [new Date().toISOString(), sessionId]));
  }
}

/** Signs every account in through Inkwell (a few at a time); resolves with their access tokens. */
export async function signIn(baseUrl, accounts, parallel = 4) {
  const tokens = [];
  for (let i = 0; i < accounts.length; i += parallel) {
    const batch = accounts.slice(i, i + parallel).map(async ({ email, password }) => {
      const response = await fetch(`${baseUrl}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      });
      const text = await response.text();
      if (response.status !== 200) throw new Error(`login of ${email}: HTTP ${response.status}: ${text.slice(0, 200)}`);
      return JSON.parse(text).accessToken;
    });
    tokens.push(...(await Promise.all(batch)));
  }
  return tokens;
}

/**
 * Tokens for one backend, fresh enough for the next run: signs the readers (`accounts`)
 * and `editors` in again through the given Inkwell when the last tokens are older than
 * 10 minutes, then copies the new sessions from its database (`target`) into every
 * other copy (`mirrors`: the reference's, the other Inkwells'). Resolves with
 * { tokens, writers: { users: [{ token, id }], editors: [{ token, id, postIds }] } }.
 */
export function tokenKeeper({ accounts, editors = [], target, mirrors }) {
  let current;
  let at = 0;
  return async (inkwell) => {
    if (!current || Date.now() - at > TOKEN_MAX_AGE_MS) {
      at = Date.now();
      const tokens = await signIn(inkwell.url, [...accounts, ...editors]);
      for (const mirror of mirrors) await mirrorSessions(target, mirror);
      const readerTokens = tokens.slice(0, accounts.length);
      current = {
        tokens: readerTokens,
        writers: {
          users: accounts.map((a, i) => ({ token: readerTokens[i], id: a.userId })),
          editors: editors.map((e, i) => ({ token: tokens[accounts.length + i], id: e.userId, postIds: e.postIds })),
        },
      };
    }
    return current;
  };
}
