import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { createPostgresPool, type CountedPostgresPool } from '../../../src/db/postgres-pool.js';
import { freshDatabase } from './instances.js';

/**
 * The pool Kysely checks clients out of (src/db/postgres-pool.ts) hands a released client
 * out again rather than making a new one: Kysely keys per-client state by it in WeakMaps,
 * whose entries would otherwise live until a full collection (docs/decisions.md,
 * "Nothing per request lives until a full collection").
 */
let database: { url: string; drop(): Promise<void> };
let pool: CountedPostgresPool;

beforeAll(async () => {
  database = await freshDatabase(inject('postgresUrl'));
  pool = createPostgresPool({ url: database.url, poolSize: 2 });
});

afterAll(async () => {
  await pool.end();
  await database.drop();
});

const pid = async (client: Awaited<ReturnType<CountedPostgresPool['connect']>>) =>
  ((await client.query('select pg_backend_pid() as pid', [])) as { rows: { pid: number }[] }).rows[0]!.pid;

it('hands a released client out again; one released twice is handed out once', async () => {
  const first = await pool.connect();
  expect(await pid(first)).toBeGreaterThan(0);
  first.release();
  const again = await pool.connect();
  expect(again).toBe(first);
  again.release();
  again.release();
  const [a, b] = await Promise.all([pool.connect(), pool.connect()]);
  expect(a).not.toBe(b);
  // Each works on a connection of its own.
  const [pa, pb] = await Promise.all([pid(a), pid(b)]);
  expect(pa).not.toBe(pb);
  a.release();
  b.release();
});

it('a client released while its connection was still being checked out does not keep it when handed out again', async () => {
  const client = await pool.connect();
  const pending = pid(client); // checks a connection out
  client.release(); // before it arrived: it goes back to its pool once it does
  await pending.catch(() => {});
  const next = await pool.connect();
  expect(next).toBe(client);
  // Takes a connection of its own: both of the pool's two are free, none is shared.
  const other = await pool.connect();
  const [p1, p2] = await Promise.all([pid(next), pid(other)]);
  expect(p1).not.toBe(p2);
  next.release();
  other.release();
  expect(pool.use().every((use) => use.idle === use.open)).toBe(true);
});
