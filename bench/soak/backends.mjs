/**
 * The soak's data, on SQLite or on PostgreSQL + Redis, prepared as the mixed bench does
 * (bench/mixed/run.mjs): 100 users × 10 published posts, a pool of password accounts
 * with one draft each (bench/mixed/accounts.mjs). Also a read-only view of what the
 * service stored during a window, to know how many events it published.
 */
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { createBenchDatabase } from '../lib/seed.mjs';
import { startService } from '../lib/service.mjs';
import { prepareAccounts } from '../mixed/accounts.mjs';
import { insertUsersAndPosts } from '../postgres/seed.mjs';
import { startPostgres, startRedis } from '../postgres/servers.mjs';

const SHAPE = { users: 100, postsPerUser: 10 };

/**
 * Returns { name, label, dbFile, env, data: { userIds, postIds, draftIds }, accounts,
 * openStore() }; `cleanups` gets what stops or removes it.
 */
export async function prepareBackend(name, { accounts: count, cleanups }) {
  if (name === 'sqlite') {
    const db = await createBenchDatabase(SHAPE);
    cleanups.push(() => db.remove());
    const { accounts, draftIds } = await prepareAccounts({ kind: 'sqlite', file: db.dbFile }, { count });
    return {
      name,
      label: 'SQLite',
      dbFile: db.dbFile,
      env: {},
      data: { userIds: db.userIds, postIds: db.postIds, draftIds },
      accounts,
      openStore: () => sqliteStore(db.dbFile),
    };
  }
  if (name === 'postgres') {
    const postgres = await startPostgres();
    cleanups.push(() => postgres.stop());
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    const url = await postgres.createDatabase('inkwell_soak');
    const env = { DATABASE_URL: url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'bench-soak:' };
    await (await startService({ dbFile: 'unused', env })).stop(); // migrates the empty database
    const seeded = await insertUsersAndPosts(url, SHAPE);
    const { accounts, draftIds } = await prepareAccounts({ kind: 'postgres', url }, { count });
    return {
      name,
      label: 'PostgreSQL + Redis',
      dbFile: 'unused',
      env,
      data: { ...seeded, draftIds },
      accounts,
      openStore: () => postgresStore(url),
    };
  }
  throw new Error(`SOAK_DB: unknown database ${name}`);
}

/*
 * What was stored in [from, to) (ISO timestamps, as the service writes created_at):
 * new reactions per post, and new accounts. { reactions: Map<postId, n>, users, close() }.
 */

function sqliteStore(file) {
  const db = new SQLite(file, { readonly: true });
  db.pragma('busy_timeout = 5000');
  const reactions = db.prepare('select post_id, count(*) as n from reactions where created_at >= ? and created_at < ? group by post_id');
  const users = db.prepare('select count(*) as n from users where created_at >= ? and created_at < ?');
  return {
    async between(from, to) {
      return {
        reactions: new Map(reactions.all(from, to).map((r) => [r.post_id, Number(r.n)])),
        users: Number(users.get(from, to).n),
      };
    },
    async close() {
      db.close();
    },
  };
}

async function postgresStore(url) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  return {
    async between(from, to) {
      const reactions = await client.query('select post_id, count(*) as n from reactions where created_at >= $1 and created_at < $2 group by post_id', [from, to]);
      const users = await client.query('select count(*) as n from users where created_at >= $1 and created_at < $2', [from, to]);
      return {
        reactions: new Map(reactions.rows.map((r) => [r.post_id, Number(r.n)])),
        users: Number(users.rows[0].n),
      };
    },
    close: () => client.end(),
  };
}
