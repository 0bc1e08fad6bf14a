import { closeSync, copyFileSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Checkpoints } from '../../src/db/checkpoints.js';
import { connectDatabase, type Db } from '../../src/db/connect.js';

/**
 * src/db/checkpoints.ts on real SQLite files: once the database is written, a worker
 * thread runs the WAL checkpoints and the serving connection's own are off; what it
 * copies lands in the database file; its checkpoints are not commits (the external-change
 * poll does not move); a thread that cannot run gives the checkpoints back.
 */

let dir: string;
const closing: (() => unknown)[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'inkwell-checkpoints-'));
});
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
  rmSync(dir, { recursive: true, force: true });
});

function open(file: string): Db {
  const db = connectDatabase({ kind: 'sqlite', file });
  closing.push(() => db.close());
  return db;
}

const autocheckpoint = async (db: Db) => (await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(db.kysely)).rows[0]!.wal_autocheckpoint;

/** Rows of `t` in the database file alone, without its WAL: only what checkpoints copied there. */
function rowsInFileAlone(file: string): number {
  const copy = join(dir, `copy-${Math.random().toString(36).slice(2)}.db`);
  copyFileSync(file, copy);
  const db = new SQLite(copy);
  try {
    return db.prepare("select count(*) from sqlite_master where name = 't'").pluck().get() === 0
      ? 0
      : (db.prepare('select count(*) from t').pluck().get() as number);
  } finally {
    db.close();
  }
}

/** The WAL header's checkpoint sequence (bytes 12–15): SQLite adds one each time it starts the WAL over. */
function walSequence(file: string): number {
  const header = Buffer.alloc(16);
  const fd = openSync(`${file}-wal`, 'r');
  try {
    readSync(fd, header, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  return header.readUInt32BE(12);
}

/** Lets the current event-loop turn end (the external-change poll answers once per turn). */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WAL checkpoints in a worker thread', () => {
  it('turn the serving connection’s own checkpoints off and copy every commit into the file', async () => {
    const file = join(dir, 'served.db');
    const db = open(file);
    expect(await autocheckpoint(db)).toBe(1000);
    await sql`create table t (id integer primary key, v text)`.execute(db.kysely);
    // The first write started the thread; once it runs, the serving connection checkpoints no more.
    await expect.poll(() => autocheckpoint(db), { timeout: 10_000 }).toBe(0);

    // More pages than SQLite's automatic threshold (1,000): the serving connection would have copied some itself.
    for (let i = 0; i < 1500; i++) await sql`insert into t (v) values (${'x'.repeat(200)})`.execute(db.kysely);
    await expect.poll(() => rowsInFileAlone(file), { timeout: 10_000 }).toBe(1500);
    expect(await autocheckpoint(db)).toBe(0);
  });

  it('are not commits: the external-change poll stands still through them', async () => {
    const file = join(dir, 'polled.db');
    const db = open(file);
    await sql`create table t (id integer primary key, v text)`.execute(db.kysely);
    await expect.poll(() => autocheckpoint(db), { timeout: 10_000 }).toBe(0);
    await nextTurn();
    const before = db.externalChanges!();
    for (let i = 0; i < 50; i++) await sql`insert into t (v) values (${String(i)})`.execute(db.kysely);
    await expect.poll(() => rowsInFileAlone(file), { timeout: 10_000 }).toBe(50);
    await nextTurn();
    expect(db.externalChanges!()).toBe(before);

    // Another connection's commit still moves it: the poll is alive.
    const other = new SQLite(file);
    other.prepare("insert into t (v) values ('other')").run();
    other.close();
    await nextTurn();
    expect(db.externalChanges!()).toBe(before! + 1);
  });

  it('give the checkpoints back to the serving connection when the thread cannot run', async () => {
    const file = join(dir, 'fallback.db');
    const sqlite = new SQLite(file);
    closing.push(() => sqlite.close());
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('wal_autocheckpoint = 0');
    // A file the thread cannot open: it fails at start.
    const checkpoints = new Checkpoints(sqlite, join(dir, 'missing', 'nothing.db'));
    checkpoints.wrote();
    await expect.poll(() => sqlite.pragma('wal_autocheckpoint', { simple: true }), { timeout: 10_000 }).toBe(1000);
    // Asked again, it starts nothing new and close() has nothing to wait for.
    checkpoints.wrote();
    await checkpoints.close();
  });

  it('close the thread with the database, losing nothing', async () => {
    const file = join(dir, 'closed.db');
    const db = connectDatabase({ kind: 'sqlite', file });
    await sql`create table t (id integer primary key, v text)`.execute(db.kysely);
    for (let i = 0; i < 20; i++) await sql`insert into t (v) values (${String(i)})`.execute(db.kysely);
    await db.close();
    const reopened = new SQLite(file);
    closing.push(() => reopened.close());
    expect(reopened.prepare('select count(*) from t').pluck().get()).toBe(20);
  });
});

/** A WAL-mode file with one table `t (id, v)`, its checkpoints on the thread, and a write that says so first. */
function walWithCheckpoints(name: string, delayMs: number, walLimitBytes?: number) {
  const file = join(dir, name);
  const sqlite = new SQLite(file);
  closing.push(() => sqlite.close());
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = NORMAL');
  sqlite.exec('create table t (id integer primary key, v)');
  const checkpoints = new Checkpoints(sqlite, file, delayMs, walLimitBytes);
  closing.unshift(() => checkpoints.close());
  const insert = sqlite.prepare('insert into t (v) values (?)');
  const write = (value: unknown) => {
    checkpoints.wrote();
    insert.run(value);
  };
  return { file, sqlite, write };
}

describe('a WAL under steady writes', () => {
  it('is started over once long, and its file cut back, instead of growing with every write', async () => {
    // 1 MiB rather than 16, to keep the test short.
    const limit = 1024 * 1024;
    const { file, sqlite, write: writeRow } = walWithCheckpoints('steady.db', 20, limit);
    const row = Buffer.alloc(4096, 7);
    const write = () => writeRow(row);
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const walBytes = () => statSync(`${file}-wal`).size;

    write();
    const before = walSequence(file);
    // ~24 MiB of frames over at least 3 s, a write a millisecond: one lands during each of
    // the thread's checkpoints, so SQLite alone never starts the WAL over.
    for (let i = 0; i < 3000; i++) {
      write();
      await sleep(1);
    }
    expect(walSequence(file) - before).toBeGreaterThanOrEqual(2);
    // Once the writes slow down, the file is back within the limit (a write or two past it at most).
    await expect
      .poll(
        async () => {
          write();
          await sleep(50);
          return walBytes();
        },
        { timeout: 20_000 },
      )
      .toBeLessThanOrEqual(limit + 3 * (4096 + 24));
    expect(sqlite.prepare('select count(*) from t').pluck().get()).toBeGreaterThan(3000);
  });

  it('is not started over while short, so the event loop does not fsync its header at a moderate write rate', async () => {
    const { file, write: writeRow } = walWithCheckpoints('moderate.db', 5);
    const write = (i: number) => writeRow(`row ${i}`);
    write(0);
    const before = walSequence(file);
    // A write every 40 ms: each finds the previous one's checkpoint done, every frame copied,
    // which alone would start the WAL over (and fsync it) at each write.
    for (let i = 1; i <= 40; i++) {
      write(i);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    expect(walSequence(file) - before).toBe(0);
    // The checkpoints still copy every commit into the file.
    await expect.poll(() => rowsInFileAlone(file), { timeout: 10_000 }).toBe(41);
  });
});
