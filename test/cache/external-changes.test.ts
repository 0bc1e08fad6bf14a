import { existsSync, mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { externalChanges, type ExternalChanges } from '../../src/cache/external-changes.js';

/**
 * externalChanges (src/cache/external-changes.ts) on real SQLite files: in WAL mode it sees
 * another connection's commit through `PRAGMA data_version` of a read-only watcher
 * connection, asked at most once per event-loop turn (so a commit within the same turn shows only
 * in the next one, by design), is moved neither by its own connection's reads nor by its
 * own commits (those bump their own tags), cannot tell while its own connection holds a
 * transaction open (undefined, and the next turn can), closes its watcher connection;
 * without WAL (':memory:', a rollback-journal file) it asks `PRAGMA data_version`.
 */

/** Lets the current event-loop turn end: the counter's own `setImmediate` runs first. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

let dir: string;
const open: SQLite.Database[] = [];
const counters: ExternalChanges[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'inkwell-sqlite-changes-'));
});
afterEach(() => {
  for (const counter of counters.splice(0)) {
    try {
      counter.close();
    } catch {
      // Already closed by the test.
    }
  }
  for (const db of open.splice(0)) db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A connection on `file` with the given journal mode (and a table `t` on first use). */
function connect(file: string, journalMode: 'wal' | 'delete' = 'wal'): SQLite.Database {
  const db = new SQLite(file);
  open.push(db);
  db.pragma(`journal_mode = ${journalMode}`);
  db.exec('create table if not exists t (id integer primary key, v text)');
  return db;
}

/** The flag the write tracker keeps; tests open transactions with `begin` directly. */
const inTransaction = (db: SQLite.Database) => () => db.inTransaction;

function counterOn(db: SQLite.Database, file: string): ExternalChanges {
  const counter = externalChanges(db, file, inTransaction(db));
  counters.push(counter);
  return counter;
}

/** Two connections on one WAL file: `mine` carries the counter, `other` writes. */
function walPair() {
  const file = join(dir, 'db.sqlite');
  const mine = connect(file);
  const other = connect(file);
  expect(mine.pragma('journal_mode', { simple: true })).toBe('wal');
  const counter = counterOn(mine, file);
  const insert = other.prepare('insert into t (v) values (?)');
  return { file, mine, other, counter, commitElsewhere: () => insert.run('x') };
}

describe('WAL mode (a watcher connection)', () => {
  it("another connection's committed INSERT makes read() larger in the next turn", async () => {
    const { counter, commitElsewhere } = walPair();
    const before = counter.poll();
    await nextTurn();
    // Nothing committed: the same number.
    expect(counter.poll()).toBe(before);
    await nextTurn();
    commitElsewhere();
    await nextTurn();
    const after = counter.poll()!;
    expect(after).toBeGreaterThan(before!);
    // Each further commit shows again.
    await nextTurn();
    commitElsewhere();
    await nextTurn();
    expect(counter.poll()).toBeGreaterThan(after);
  });

  it("an uncommitted write elsewhere does not count, its commit does", async () => {
    const { other, counter } = walPair();
    const before = counter.poll();
    other.exec('begin immediate');
    other.prepare('insert into t (v) values (?)').run('pending');
    await nextTurn();
    expect(counter.poll()).toBe(before);
    other.exec('commit');
    await nextTurn();
    expect(counter.poll()).toBeGreaterThan(before!);
  });

  it("the counter's own connection reading does not change it", async () => {
    const { mine, counter, commitElsewhere } = walPair();
    commitElsewhere();
    await nextTurn();
    const before = counter.poll();
    for (let i = 0; i < 3; i++) {
      expect(mine.prepare('select count(*) as n from t').get()).toEqual({ n: 1 });
      mine.prepare('select * from t').all();
      await nextTurn();
      expect(counter.poll()).toBe(before);
    }
  });

  it("the counter's own connection committing does not change it; another's commit at the same time does", async () => {
    const { mine, counter, commitElsewhere } = walPair();
    const own = mine.prepare('insert into t (v) values (?)');
    await nextTurn();
    const before = counter.poll();
    for (let i = 0; i < 3; i++) {
      own.run('mine');
      mine.transaction(() => own.run('mine, in a transaction'))();
      await nextTurn();
      expect(counter.poll()).toBe(before);
    }
    own.run('mine');
    commitElsewhere();
    own.run('mine again');
    await nextTurn();
    expect(counter.poll()).toBeGreaterThan(before!);
  });

  it('cannot tell while its own connection holds a transaction open, and tells once it ends', async () => {
    const { mine, counter, commitElsewhere } = walPair();
    await nextTurn();
    const before = counter.poll();
    mine.exec('begin');
    mine.prepare('select count(*) from t').get(); // the snapshot is taken: data_version stands still
    commitElsewhere();
    await nextTurn();
    expect(counter.poll()).toBeUndefined();
    await nextTurn();
    expect(counter.poll()).toBeUndefined();
    mine.exec('commit');
    await nextTurn();
    expect(counter.poll()).toBeGreaterThan(before!);
    // Nothing new: an unchanged watcher answers at once, even inside a transaction.
    mine.exec('begin');
    await nextTurn();
    const settled = counter.poll();
    expect(settled).toBeGreaterThan(before!);
    mine.exec('commit');
  });

  it('asks once per turn: a commit between two polls of one turn shows in the next turn', async () => {
    const { counter, commitElsewhere } = walPair();
    await nextTurn();
    const first = counter.poll();
    commitElsewhere();
    // Intended: the same turn answers from the first read, without another system call.
    // A request handled in this turn arrived before the commit was acknowledged to anyone.
    expect(counter.poll()).toBe(first);
    await nextTurn();
    expect(counter.poll()).toBeGreaterThan(first!);
  });

  it("close() closes the watcher's file descriptor without throwing", () => {
    const file = join(dir, 'db.sqlite');
    const mine = connect(file);
    const fileDescriptors = () => {
      if (!existsSync('/proc/self/fd')) return undefined;
      let n = 0;
      for (const fd of readdirSync('/proc/self/fd')) {
        try {
          if (readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
        } catch {
          // The directory listing's own descriptor is gone by now.
        }
      }
      return n;
    };
    const before = fileDescriptors();
    const counter = externalChanges(mine, file, inTransaction(mine));
    const during = fileDescriptors();
    expect(() => counter.close()).not.toThrow();
    // The connection itself is untouched.
    expect(mine.prepare('select count(*) as n from t').get()).toEqual({ n: 0 });
    mine.close();
    const after = fileDescriptors();
    if (before !== undefined) {
      // Linux: the watcher's descriptor on the database file while open. SQLite keeps a
      // closed connection's descriptor for the process's other connection on the file
      // (closing it would drop that one's locks) until that one closes too: none is left.
      expect(during).toBe(before + 1);
      expect(after).toBe(0);
    }
  });
});

describe('without WAL (PRAGMA data_version)', () => {
  it("':memory:' (no other connection can exist) answers a constant", async () => {
    const db = new SQLite(':memory:');
    open.push(db);
    const counter = counterOn(db, ':memory:');
    const first = counter.poll();
    expect(typeof first).toBe('number');
    expect(Number.isFinite(first)).toBe(true);
    // Its own writes are not another connection's: data_version stays.
    db.exec('create table t (id integer primary key)');
    db.exec('insert into t default values');
    await nextTurn();
    expect(counter.poll()).toBe(first);
    expect(() => counter.close()).not.toThrow();
  });

  it("a rollback-journal file uses the fallback and sees another connection's commit at once", () => {
    const file = join(dir, 'journal.sqlite');
    const mine = connect(file, 'delete');
    const other = connect(file, 'delete');
    expect(mine.pragma('journal_mode', { simple: true })).toBe('delete');
    const counter = counterOn(mine, file);
    const before = counter.poll();
    other.prepare('insert into t (v) values (?)').run('x');
    // No per-turn memory here: data_version answers each poll.
    expect(counter.poll()).toBeGreaterThan(before!);
    // Its own commits do not count; inside its own open transaction it cannot tell.
    const after = counter.poll();
    mine.prepare('insert into t (v) values (?)').run('mine');
    expect(counter.poll()).toBe(after);
    mine.exec('begin');
    expect(counter.poll()).toBeUndefined();
    mine.exec('commit');
    expect(() => counter.close()).not.toThrow();
  });
});
