import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolUse } from '../../src/db/pool-use.js';
import { createEnv, onPostgres, type TestEnv } from '../domain/helpers.js';

// What `inkwell_db_pool_*` reads (Db.poolUse), on the project's real database. On
// PostgreSQL reads and writes have pools of their own (src/db/postgres-pool.ts): a
// transaction holds a writer's connection, and a read meanwhile takes a reader's, even
// when every writer's connection waits on a lock. On SQLite — one connection — a query
// arriving during a transaction waits for it, and the reading says so.

const POOL = 5; // test/domain/helpers.ts

describe('database pool use', () => {
  let env: TestEnv;
  const use = (): Record<string, PoolUse> => Object.fromEntries(env.db.poolUse().map((p) => [p.pool, p]));
  const inUse = (p: PoolUse | undefined) => (p ? p.open - p.idle : 0);

  beforeAll(async () => {
    env = await createEnv();
  });

  afterAll(async () => {
    await env?.close();
  });

  it('counts connections in use, idle and waited for, pool by pool', async () => {
    const { db } = env;
    await sql`select 1`.execute(db.kysely);
    const atRest = use();
    expect(Object.keys(atRest).sort()).toEqual(onPostgres ? ['reads', 'writes'] : ['shared']);
    for (const p of Object.values(atRest)) {
      expect(p.max).toBe(onPostgres ? POOL : 1);
      expect(p.waiting).toBe(0);
      expect(inUse(p)).toBe(0);
    }

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const transaction = db.kysely.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      entered();
      await held;
    });
    await inside;
    expect(inUse(use()[onPostgres ? 'writes' : 'shared'])).toBe(1);
    expect(inUse(use().reads)).toBe(0);

    // Outside the transaction: SQLite's one connection is taken, so this query waits;
    // on PostgreSQL it is a reader's.
    const outside = sql`select 2 as n`.execute(db.kysely);
    await new Promise((r) => setTimeout(r, 20));
    expect(use()[onPostgres ? 'reads' : 'shared']!.waiting).toBe(onPostgres ? 0 : 1);

    release();
    await transaction;
    expect((await outside).rows).toEqual([{ n: 2 }]);
    for (const p of Object.values(use())) {
      expect(p.waiting).toBe(0);
      expect(inUse(p)).toBe(0);
    }
  });

  it.runIf(onPostgres)('answers reads while every writer waits on a lock', async () => {
    const { db } = env;
    await sql`insert into books (id, title, author, year, created_at) values ('pool-use', 'Held', 'Lock', 2000, '2026-01-01T00:00:00.000Z')`.execute(db.kysely);
    const url = new URL(process.env.INKWELL_TEST_POSTGRES_URL!);
    url.pathname = `/${await databaseName(env)}`;
    const locker = new pg.Client({ connectionString: url.toString() });
    await locker.connect();
    try {
      await locker.query('begin');
      // EXCLUSIVE: plain selects still run; every write to the table waits.
      await locker.query('lock table books in exclusive mode');
      let settled = 0;
      const writes = Array.from({ length: POOL + 2 }, (_, i) =>
        sql`update books set year = ${2001 + i} where id = 'pool-use'`.execute(db.kysely).finally(() => settled++),
      );
      await until(() => inUse(use().writes) === POOL && use().writes!.waiting === 2);

      const read = await sql<{ title: string }>`select title from books where id = 'pool-use'`.execute(db.kysely);
      expect(read.rows).toEqual([{ title: 'Held' }]);
      expect(settled).toBe(0); // the writes still wait: the read did not need one of their connections
      expect(use().reads!.waiting).toBe(0);

      await locker.query('commit');
      await Promise.all(writes);
      expect(settled).toBe(POOL + 2);
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
  });
});

async function databaseName(env: TestEnv): Promise<string> {
  const { rows } = await sql<{ name: string }>`select current_database() as name`.execute(env.db.kysely);
  return rows[0]!.name;
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('the writes never all waited on the lock');
    await new Promise((r) => setTimeout(r, 10));
  }
}
