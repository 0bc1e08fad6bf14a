import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnv, onPostgres, type TestEnv } from '../domain/helpers.js';

// What `inkwell_db_pool_*` reads (Db.poolUse), on the project's real database: a
// transaction holding a connection is in use, and on SQLite — one connection — a
// query arriving meanwhile waits for it, and the reading says so.

describe('database pool use', () => {
  let env: TestEnv;

  beforeAll(async () => {
    env = await createEnv();
  });

  afterAll(async () => {
    await env?.close();
  });

  it('counts connections in use, idle and waited for', async () => {
    const { db } = env;
    await sql`select 1`.execute(db.kysely);
    const atRest = db.poolUse();
    expect(atRest.max).toBe(onPostgres ? 5 : 1);
    expect(atRest.waiting).toBe(0);
    expect(atRest.idle).toBe(atRest.open);

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
    const during = db.poolUse();
    expect(during.open - during.idle).toBe(1);

    // Outside the transaction: SQLite's one connection is taken, so this query waits.
    const outside = sql`select 2 as n`.execute(db.kysely);
    await new Promise((r) => setTimeout(r, 20));
    expect(db.poolUse().waiting).toBe(onPostgres ? 0 : 1);

    release();
    await transaction;
    expect((await outside).rows).toEqual([{ n: 2 }]);
    const after = db.poolUse();
    expect(after.waiting).toBe(0);
    expect(after.idle).toBe(after.open);
  });
});
