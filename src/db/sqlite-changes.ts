import { closeSync, openSync, readSync } from 'node:fs';
import type SQLite from 'better-sqlite3';

/**
 * Commits to a SQLite file by other connections (another process, such as the
 * `user:role` operator script), which result caches must not outlive (docs/decisions.md).
 * This process's own commits do not count: src/domain bumps exactly what they changed.
 * One `pread` of the wal-index header per event-loop turn; `PRAGMA data_version` only
 * when the header moved.
 */
export interface ExternalChanges {
  /** Grows when another connection committed since the last call; undefined when this turn cannot tell. */
  poll(): number | undefined;
  close(): void;
}

const HEADER_BYTES = 48;

/**
 * `PRAGMA data_version` moves only for other connections' commits, but opens a read
 * transaction (eight system calls). In WAL mode every commit, ours or not, rewrites the
 * wal-index header, the first 48 bytes of the `-shm` file
 * (https://sqlite.org/walformat.html): when it has not changed nothing committed; when
 * it has, data_version tells whose commit it was (header first, then data_version: a
 * commit between the two shows in the next poll). A torn header read only looks like a
 * change. Inside a transaction of our own connection data_version stands still (the
 * snapshot is held), so that turn cannot tell and answers undefined.
 *
 * Once per turn: a request handled in a turn arrived before it began or during it, so a
 * commit acknowledged before the request was sent is seen, short of one landing within
 * the same sub-millisecond turn. Without WAL, data_version is asked each time.
 */
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
