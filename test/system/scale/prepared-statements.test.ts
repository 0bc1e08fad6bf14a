import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { connectDatabase, type Db } from '../../../src/db/connect.js';
import { migrateToLatest } from '../../../src/db/migrate.js';
import { MAX_NAMED_PARAMETERS, StatementNames } from '../../../src/db/statement-names.js';
import { freshDatabase } from './instances.js';

/**
 * Named statements on PostgreSQL (src/db/statement-names.ts, src/db/postgres-pool.ts):
 * each connection prepares a read once; a prepared statement a migration made stale is
 * sent again unnamed, so no request fails for it; with the setting off nothing is
 * prepared. Pools of one connection: reads meet one server session, transactions
 * another (src/db/postgres-pool.ts keeps reads and writes apart).
 */
let database: { url: string; drop(): Promise<void> };
const handles: Db[] = [];

const open = (preparedStatements: boolean) => {
  const db = connectDatabase({ kind: 'postgres', url: database.url, poolSize: 1, preparedStatements });
  handles.push(db);
  return db;
};
const prepared = async (handle: Db['kysely']) =>
  (await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(handle)).rows.map((r) => r.statement);
const backendPid = async (db: Db) => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db.kysely)).rows[0]!.pid;
const usersById = (db: Db, id: string) => db.kysely.selectFrom('users').selectAll().where('id', '=', id).execute();

beforeAll(async () => {
  database = await freshDatabase(inject('postgresUrl'));
  await migrateToLatest(open(true));
});

afterAll(async () => {
  await Promise.all(handles.map((db) => db.close()));
  await database.drop();
});

describe('prepared statements on PostgreSQL', () => {
  it('prepares each read once per connection and reuses it', async () => {
    const db = open(true);
    await usersById(db, 'nobody');
    await usersById(db, 'still nobody');
    const statements = await prepared(db.kysely);
    expect(statements.filter((s) => s.includes('from "users" where "id" = $1'))).toHaveLength(1);
    // A transaction's statements are prepared on its connection; transaction control never is.
    await db.kysely.transaction().execute(async (tx) => void (await tx.selectFrom('books').select('id').execute()));
    const inTransactions = await db.kysely.transaction().execute((tx) => prepared(tx));
    expect(inTransactions.filter((s) => s.includes('from "books"'))).toHaveLength(1);
    expect(inTransactions.some((s) => /^\s*(begin|commit)/i.test(s))).toBe(false);
  });

  it('a statement a migration made stale is sent again unnamed: the caller gets its rows', async () => {
    const db = open(true);
    await db.kysely.insertInto('books').values({ id: 'b-stale', title: 'Stale', author: 'A', year: 2001, created_at: new Date().toISOString() }).execute();
    const books = () => db.kysely.selectFrom('books').selectAll().where('id', '=', 'b-stale').execute();
    expect(await books()).toHaveLength(1);
    const before = await backendPid(db);
    // Another instance's migration: a column more under the prepared `select *`.
    await sql`alter table books add column shelf text`.execute(open(false).kysely);
    const [book] = await books();
    expect(book).toMatchObject({ id: 'b-stale', title: 'Stale', shelf: null });
    // That connection was closed on release; the next one prepares the new shape.
    expect(await backendPid(db)).not.toBe(before);
    expect(await books()).toHaveLength(1);
    expect((await prepared(db.kysely)).filter((s) => s.includes('from "books"'))).toHaveLength(1);
    await sql`alter table books drop column shelf`.execute(open(false).kysely);
  });

  it('inside a transaction the stale statement fails the transaction, and the next one works', async () => {
    const db = open(true);
    const titles = (handle: Pick<Db['kysely'], 'selectFrom'>) => handle.selectFrom('books').selectAll().where('year', '>', 0).execute();
    await db.kysely.transaction().execute((tx) => titles(tx)); // prepared on the transactions' connection
    await sql`alter table books add column edition int`.execute(open(false).kysely);
    await expect(db.kysely.transaction().execute((tx) => titles(tx))).rejects.toMatchObject({ code: '0A000' });
    // That connection was closed on release: the next transaction prepares the new shape.
    expect((await db.kysely.transaction().execute((tx) => titles(tx))).every((b) => 'edition' in b)).toBe(true);
    await sql`alter table books drop column edition`.execute(open(false).kysely);
  });

  it('a long list is sent unnamed: its text is one of many, each held in server memory', async () => {
    const db = open(true);
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `u-${i}`);
    await db.kysely.selectFrom('users').select('id').where('id', 'in', ids(MAX_NAMED_PARAMETERS)).execute();
    await db.kysely.selectFrom('users').select('id').where('id', 'in', ids(MAX_NAMED_PARAMETERS + 1)).execute();
    const lists = (await prepared(db.kysely)).filter((s) => s.startsWith('select "id" from "users" where "id" in'));
    expect(lists.map((s) => s.split('$').length - 1)).toEqual([MAX_NAMED_PARAMETERS]);
  });

  it('names the first texts only', () => {
    const names = new StatementNames(2);
    expect([names.nameOf('select 1', 0), names.nameOf('select 2', 0), names.nameOf('select 1', 0)]).toEqual(['inkwell_1', 'inkwell_2', 'inkwell_1']);
    expect(names.nameOf('select 3', 0)).toBeUndefined();
  });

  it('with DATABASE_PREPARED_STATEMENTS=off nothing is prepared', async () => {
    const db = open(false);
    await usersById(db, 'nobody');
    expect(await prepared(db.kysely)).toEqual([]);
  });
});

describe('DATABASE_PREPARED_STATEMENTS', () => {
  const postgres = { DATABASE_URL: 'postgres://db.example/inkwell' };
  it('is on unless set off', () => {
    expect(loadConfig(postgres).database).toMatchObject({ preparedStatements: true });
    expect(loadConfig({ ...postgres, DATABASE_PREPARED_STATEMENTS: 'off' }).database).toMatchObject({ preparedStatements: false });
  });

  it('refuses anything but on and off, naming the variable', () => {
    expect(() => loadConfig({ ...postgres, DATABASE_PREPARED_STATEMENTS: 'maybe' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...postgres, DATABASE_PREPARED_STATEMENTS: 'maybe' })).toThrow(/DATABASE_PREPARED_STATEMENTS/);
  });
});
