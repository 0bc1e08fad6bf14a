import { closeSync, openSync, readSync } from 'node:fs';
import type SQLite from 'better-sqlite3';

/**
 * Counts commits made to a SQLite database by other connections (another process on
 * the same file, such as the `user:role` operator script), for result caches that must
 * never serve data older than the database's (docs/decisions.md). This process's own
 * commits do not count: src/domain bumps exactly what they changed.
 *
 * `PRAGMA data_version` tells exactly this (it moves only for other connections'
 * commits), but opens a read transaction: eight system calls, too many per request. In
 * WAL mode every commit, ours or not, rewrites the wal-index header, the first 48 bytes
 * of the `-shm` file (https://sqlite.org/walformat.html), and one `pread` of them tells
 * whether anything committed at all. So the header is read, at most once per
 * event-loop turn; only when it changed is data_version asked whose commit it was
 * (header first, then data_version: a commit between the two shows in the next read).
 * A torn header read (no lock is taken) only looks like a change.
 *
 * Inside a transaction of our own connection data_version stands still (the snapshot
 * is held), so a changed header cannot be explained then: `poll` answers undefined for
 * that turn and looks again in the next. A request handled in a turn arrived before the
 * turn began or during it, so a commit acknowledged before it was sent is seen, short of
 * one landing within the same sub-millisecond turn.
 *
 * Without WAL it asks data_version each time (an in-memory database has no other connections).
 */
export interface ExternalChanges {
  /** Grows when another connection committed since the last call; undefined when this turn cannot tell. */
  poll(): number | undefined;
  close(): void;
}

const HEADER_BYTES = 48;

export function externalChanges(sqlite: SQLite.Database, file: string, inTransaction: () => boolean): ExternalChanges {
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  // Also makes sure the wal-index exists: the first read transaction creates it.
  dataVersion.get();
  if (file === ':memory:') return { poll: () => 0, close: () => {} };
  const fd = walIndexOf(sqlite, file);
  if (fd === undefined) return { poll: () => (inTransaction() ? undefined : (dataVersion.get() as number)), close: () => {} };

  const seen = Buffer.alloc(HEADER_BYTES);
  const current = Buffer.alloc(HEADER_BYTES);
  let changes = 0;
  let answer: number | undefined = 0;
  let readThisTurn = false;
  const turnOver = () => {
    readThisTurn = false;
  };
  readHeader(fd, seen);
  let lastVersion = dataVersion.get() as number;
  return {
    poll() {
      if (readThisTurn) return answer;
      readThisTurn = true;
      setImmediate(turnOver);
      readHeader(fd, current);
      if (current.equals(seen)) return (answer = changes);
      if (inTransaction()) return (answer = undefined);
      current.copy(seen);
      const version = dataVersion.get() as number;
      if (version !== lastVersion) {
        lastVersion = version;
        changes++;
      }
      return (answer = changes);
    },
    close: () => closeSync(fd),
  };
}

function readHeader(fd: number, into: Buffer): void {
  const bytes = readSync(fd, into, 0, HEADER_BYTES, 0);
  if (bytes < HEADER_BYTES) into.fill(0, bytes);
}

function walIndexOf(sqlite: SQLite.Database, file: string): number | undefined {
  if (sqlite.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  try {
    return openSync(`${file}-shm`, 'r');
  } catch {
    return undefined;
  }
}
