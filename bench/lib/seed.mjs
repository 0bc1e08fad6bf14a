/**
 * A fresh bench database: the service migrates it (started once with
 * SEED_DEMO_DATA=never), then rows go in directly with better-sqlite3.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { startService } from './service.mjs';

/** A temp dir for one run; `remove()` deletes it, and so does the bench's exit (even on Ctrl-C). */
export function makeTempDir(prefix = 'inkwell-bench-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => {
    process.off('exit', remove);
    rmSync(dir, { recursive: true, force: true });
  };
  process.on('exit', remove);
  return { dir, remove };
}

/** Lets the built service create the schema, then stops it. */
export async function migrate(dbFile) {
  const service = await startService({ dbFile });
  await service.stop();
}

/**
 * Inserts `users` users with `postsPerUser` published posts each, at distinct times so
 * every "newest first" list is deterministic. Returns { userIds, postIds } (newest first).
 */
export function insertUsersAndPosts(dbFile, { users = 100, postsPerUser = 10 } = {}) {
  const db = new SQLite(dbFile);
  try {
    const base = Date.parse('2024-06-01T00:00:00.000Z');
    const at = (n) => new Date(base + n * 1000).toISOString();
    const insertUser = db.prepare(
      `insert into users (id, name, email, age, avatar, role, password_hash, created_at)
       values (?, ?, ?, ?, null, 'user', null, ?)`,
    );
    const insertPost = db.prepare(
      `insert into posts (id, author_id, title, content, published, tags, created_at, updated_at)
       values (?, ?, ?, ?, 1, ?, ?, ?)`,
    );
    const userIds = [];
    const postIds = [];
    let clock = 0;
    db.transaction(() => {
      for (let u = 0; u < users; u++) {
        const userId = randomUUID();
        insertUser.run(userId, `Bench User ${u}`, `bench${u}@inkwell.test`, 20 + (u % 50), at(clock++));
        userIds.push(userId);
        for (let p = 0; p < postsPerUser; p++) {
          const postId = randomUUID();
          const created = at(clock++);
          const content = `Post ${p} of user ${u}. ` + 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(3);
          insertPost.run(postId, userId, `Post ${p} by user ${u}`, content, JSON.stringify(['bench', `t${p}`]), created, created);
          postIds.push(postId);
        }
      }
    })();
    return { userIds: userIds.reverse(), postIds: postIds.reverse() };
  } finally {
    db.close();
  }
}

/** Temp dir + migrated and filled database. */
export async function createBenchDatabase(opts = {}) {
  const temp = makeTempDir();
  const dbFile = join(temp.dir, 'bench.db');
  try {
    await migrate(dbFile);
    const data = insertUsersAndPosts(dbFile, opts);
    return { ...temp, dbFile, ...data };
  } catch (error) {
    temp.remove();
    throw error;
  }
}
