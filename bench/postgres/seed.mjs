/** Bench data in PostgreSQL: the same shape and values bench/lib/seed.mjs writes to SQLite. */
import { randomUUID } from 'node:crypto';
import { query } from './servers.mjs';

/** The same data as bench/lib/seed.mjs puts into SQLite: users × published posts, newest first. */
export async function insertUsersAndPosts(databaseUrl, { users = 100, postsPerUser = 10 } = {}) {
  const base = Date.parse('2024-06-01T00:00:00.000Z');
  const at = (n) => new Date(base + n * 1000).toISOString();
  const userRows = [];
  const postRows = [];
  let clock = 0;
  for (let u = 0; u < users; u++) {
    const userId = randomUUID();
    userRows.push([userId, `Bench User ${u}`, `bench${u}@inkwell.test`, 20 + (u % 50), at(clock++)]);
    for (let p = 0; p < postsPerUser; p++) {
      const created = at(clock++);
      const content = `Post ${p} of user ${u}. ` + 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(3);
      postRows.push([randomUUID(), userId, `Post ${p} by user ${u}`, content, JSON.stringify(['bench', `t${p}`]), created]);
    }
  }
  await query(
    databaseUrl,
    `insert into users (id, name, email, age, avatar, role, password_hash, created_at)
     select id, name, email, age, null, 'user', null, created_at
     from unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[]) as t(id, name, email, age, created_at)`,
    [0, 1, 2, 3, 4].map((i) => userRows.map((r) => r[i])),
  );
  await query(
    databaseUrl,
    `insert into posts (id, author_id, title, content, published, tags, created_at, updated_at)
     select id, author_id, title, content, 1, tags, created_at, created_at
     from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) as t(id, author_id, title, content, tags, created_at)`,
    [0, 1, 2, 3, 4, 5].map((i) => postRows.map((r) => r[i])),
  );
  await query(databaseUrl, 'analyze');
  return { userIds: userRows.map((r) => r[0]).reverse(), postIds: postRows.map((r) => r[0]).reverse() };
}
