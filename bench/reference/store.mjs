/**
 * The reference's database access: every query is prepared once — better-sqlite3
 * statements on SQLite, named (per-connection prepared) queries through a pg pool on
 * PostgreSQL — behind one small async interface, so the resolvers are written once.
 */
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { postgresQueries, sqliteQueries } from './queries.mjs';

/**
 * { all(name, params), run(name, params), list(ids), close() } for a DATABASE_URL as Inkwell reads it.
 * `memory`: the users only, read once into memory (bench/hits/: execution with no database at all).
 */
export function openStore(databaseUrl, { poolSize = 10, memory = false } = {}) {
  if (memory) return memoryStore(databaseUrl.slice('file:'.length));
  return databaseUrl.startsWith('file:') ? sqliteStore(databaseUrl.slice('file:'.length)) : postgresStore(databaseUrl, poolSize);
}

/**
 * Every user row in a Map, loaded at start from the SQLite file: `usersByIds` answers from
 * it and every other statement is refused, so only reads of users by id (`user(id)`) can run.
 */
function memoryStore(file) {
  const db = new SQLite(file, { readonly: true });
  const users = new Map(db.prepare('select * from users').all().map((row) => [row.id, row]));
  db.close();
  return {
    all: async (name, [ids]) => {
      if (name !== 'usersByIds') throw new Error(`${name} is not served from memory`);
      return ids.flatMap((id) => users.get(id) ?? []);
    },
    run: async (name) => {
      throw new Error(`${name} is not served from memory`);
    },
    list: (ids) => ids,
    close: async () => {},
  };
}

function sqliteStore(file) {
  const db = new SQLite(file);
  // The same settings as Inkwell's own connection (src/db/connect.ts).
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  const statements = Object.fromEntries(Object.entries(sqliteQueries()).map(([name, text]) => [name, db.prepare(text)]));
  return {
    all: async (name, params) => statements[name].all(...params),
    run: async (name, params) => statements[name].run(...params).changes,
    list: (ids) => JSON.stringify(ids),
    close: async () => db.close(),
  };
}

function postgresStore(url, max) {
  const texts = postgresQueries();
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  return {
    all: async (name, values) => (await pool.query({ name, text: texts[name], values })).rows,
    run: async (name, values) => (await pool.query({ name, text: texts[name], values })).rowCount,
    list: (ids) => ids,
    close: () => pool.end(),
  };
}
