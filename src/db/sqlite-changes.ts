import { closeSync, openSync, readSync } from 'node:fs';
import type SQLite from 'better-sqlite3';

/**
 * Counts commits made to a SQLite database by other connections (another process on
 * the same file, such as the `user:role` operator script), for result caches that must
 * never serve data older than the database's.
 *
 * `PRAGMA data_version` answers this, but it opens a read transaction each time: eight
 * system calls (locks, stats, a read), a tenth of a cached response's whole cost. In
 * WAL mode the same fact is in the wal-index header, the first 48 bytes of the `-shm`
 * file (https://sqlite.org/walformat.html, "The WAL-Index Header"): every commit by any
 * connection rewrites it (its change counter and last valid frame), and readers find
 * new data only through it. So one `pread` of those bytes, compared with the last
 * ones seen, tells what data_version would: a commit is visible to a reader exactly
 * when the header says so. Reading it without a lock can at worst see a header half
 * rewritten — different from the last one, which only costs a cache miss.
 *
 * Even one read per request is a system call per request; the header is read once per
 * event-loop turn instead (the first request of a turn reads it, `setImmediate` marks
 * the turn over). A request handled in a turn arrived before it began or during it, so
 * a commit acknowledged to anyone before the request was sent is seen, short of a commit
 * landing within the same sub-millisecond turn as a request sent right after it.
 *
 * Without WAL (an in-memory database) it falls back to data_version.
 */
export interface ChangeCounter {
  /**
   * Increases whenever another connection committed since the last call (in WAL mode
   * this connection's own commits count too: harmless, they are counted anyway).
   */
  read(): number;
  close(): void;
}

const HEADER_BYTES = 48;

export function externalChangeCounter(sqlite: SQLite.Database, file: string): ChangeCounter {
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  // Also makes sure the wal-index exists: the first read transaction creates it.
  dataVersion.get();
  const fd = walIndexOf(sqlite, file);
  if (fd === undefined) return { read: () => dataVersion.get() as number, close: () => {} };

  const seen = Buffer.alloc(HEADER_BYTES);
  const current = Buffer.alloc(HEADER_BYTES);
  let changes = 0;
  let readThisTurn = false;
  const turnOver = () => {
    readThisTurn = false;
  };
  return {
    read() {
      if (readThisTurn) return changes;
      readThisTurn = true;
      setImmediate(turnOver);
      const bytes = readSync(fd, current, 0, HEADER_BYTES, 0);
      if (bytes < HEADER_BYTES) current.fill(0, bytes);
      if (!current.equals(seen)) {
        current.copy(seen);
        changes++;
      }
      return changes;
    },
    close: () => closeSync(fd),
  };
}

function walIndexOf(sqlite: SQLite.Database, file: string): number | undefined {
  if (file === ':memory:' || sqlite.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  try {
    return openSync(`${file}-shm`, 'r');
  } catch {
    return undefined;
  }
}
