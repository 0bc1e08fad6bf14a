import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { connectDatabase, type Db } from '../../src/db/connect.js';
import { migrateToLatest } from '../../src/db/migrate.js';
import { ANONYMOUS, type Caller, type Role } from '../../src/domain/caller.js';
import { createServices, type Services } from '../../src/domain/services.js';
import type { Post, User } from '../../src/domain/types.js';
import { MemoryPubSub } from '../../src/realtime/memory.js';
import type { PubSub } from '../../src/realtime/pubsub.js';
import { MemoryStore } from '../../src/store/memory.js';
import { EVERYTHING, LocalVersions } from '../../src/cache/versions.js';

export interface TestEnv {
  dir: string;
  file: string;
  /** The DATABASE_URL of this database, for scripts run against it. */
  databaseUrl: string;
  db: Db;
  kv: MemoryStore;
  pubsub: MemoryPubSub;
  versions: LocalVersions;
  services: Services;
  close(): Promise<void>;
}

/**
 * With INKWELL_TEST_POSTGRES_URL (a server URL whose user may create databases) the
 * same tests run on a PostgreSQL database of their own; otherwise on SQLite.
 */
const postgresUrl = process.env.INKWELL_TEST_POSTGRES_URL;
export const onPostgres = Boolean(postgresUrl);

/**
 * PostgreSQL databases a closed env left empty, for the next env of this worker:
 * emptying one takes ~20 ms, creating and dropping one ~250 ms, per test.
 */
const emptied: string[] = [];

/** A fresh, migrated database (a temporary SQLite file by default) with in-memory cache and pub/sub. */
export async function createEnv(): Promise<TestEnv> {
  const dir = await mkdtemp(join(tmpdir(), 'inkwell-domain-'));
  const file = join(dir, 'test.db');
  let dropDatabase = async () => {};
  let databaseUrl = `file:${file}`;
  let db: Db;
  if (postgresUrl) {
    let name = emptied.pop();
    if (name === undefined) {
      name = `inkwell_test_${randomBytes(6).toString('hex')}`;
      await adminQuery(`create database ${name}`);
    }
    const url = new URL(postgresUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
    db = connectDatabase({ kind: 'postgres', url: databaseUrl, poolSize: 5 });
    dropDatabase = async () => {
      if (await emptyAll(databaseUrl)) emptied.push(name);
      else await adminQuery(`drop database if exists ${name} with (force)`);
    };
  } else {
    db = connectDatabase({ kind: 'sqlite', file });
  }
  await migrateToLatest(db);
  const kv = new MemoryStore();
  const pubsub = new MemoryPubSub();
  // As src/backends.ts wires them without Redis.
  const versions = new LocalVersions(db.externalChanges);
  db.onUnannouncedWrite(() => versions.bump([EVERYTHING]));
  const services = createServices({ db, kv, pubsub, versions });
  return {
    dir,
    file,
    databaseUrl,
    db,
    kv,
    pubsub,
    versions,
    services,
    async close() {
      await db.close();
      await dropDatabase();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Deletes every row and restarts every sequence; false if the database could not be emptied. */
async function emptyAll(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const { rows } = await client.query<{ name: string }>(
      "select quote_ident(tablename) as name from pg_tables where schemaname = 'public' and tablename not like 'kysely_migration%'",
    );
    // A connection the test left open with a lock would make this wait: drop the database instead.
    await client.query("set lock_timeout = '2s'");
    if (rows.length > 0) await client.query(`truncate table ${rows.map((r) => r.name).join(', ')} restart identity cascade`);
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export function callerOf(user: User): Caller {
  return { kind: 'user', id: user.id, role: user.role, sessionId: null };
}

let counter = 0;

/** Waits past the current millisecond, so records made one after another have distinct created_at. */
export const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 2));

export async function makeUser(env: TestEnv, role: Role = 'user', name = `${role} ${++counter}`): Promise<User> {
  await tick();
  return env.services.users.insertAccount({ name, email: `${role}${++counter}@example.test`, role });
}

/** The cast of the permission tests: one of each role, plus a second user and editor. */
export async function makeCast(env: TestEnv) {
  const admin = await makeUser(env, 'admin');
  const editor = await makeUser(env, 'editor');
  const editor2 = await makeUser(env, 'editor');
  const alice = await makeUser(env, 'user');
  const bob = await makeUser(env, 'user');
  return {
    admin,
    editor,
    editor2,
    alice,
    bob,
    as: {
      anonymous: ANONYMOUS as Caller,
      admin: callerOf(admin),
      editor: callerOf(editor),
      editor2: callerOf(editor2),
      alice: callerOf(alice),
      bob: callerOf(bob),
    },
  };
}

export async function makePost(
  env: TestEnv,
  author: User,
  fields: { title?: string; content?: string; published?: boolean; tags?: string[] } = {},
): Promise<Post> {
  await tick();
  // Written as an admin so any author (even a plain user) can own posts in tests.
  const admin: Caller = { kind: 'user', id: 'test-admin', role: 'admin', sessionId: null };
  return env.services.posts.create(admin, {
    title: fields.title ?? `Post ${++counter}`,
    authorId: author.id,
    content: fields.content,
    published: fields.published ?? true,
    tags: fields.tags,
  });
}

/** Records every event on a channel until stopped. */
export function record<T>(pubsub: PubSub, channel: string) {
  const iterator = pubsub.subscribe<T>(channel);
  const events: T[] = [];
  void (async () => {
    for await (const event of iterator) events.push(event);
  })();
  return { events, stop: () => iterator.return?.() };
}

/** Lets queued microtasks and I/O callbacks (event delivery) run. */
export const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

export const code = (c: string) => ({ code: c });
