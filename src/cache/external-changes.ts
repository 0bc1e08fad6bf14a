import SQLite from 'better-sqlite3';
import { TurnWork } from '../turn.js';

/**
 * Commits to a SQLite file by other connections (another process, such as the
 * `user:role` operator script), which result caches must not outlive (docs/decisions.md).
 * This process's own commits do not count: src/domain bumps exactly what they changed.
 * `PRAGMA data_version` of a read-only watcher connection once per event-loop turn; that
 * of the serving connection only when the watcher's moved.
 */
export interface ExternalChanges {
  /** Grows when another connection committed since the last call; undefined when this turn cannot tell. */
  poll(): number | undefined;
  close(): void;
}

/**
 * `PRAGMA data_version` moves only for other connections' commits. The watcher, a
 * connection of its own that never holds a transaction, sees every commit, ours
 * included: when its value has not moved nothing committed; when it has, the serving
 * connection's value tells whose commit it was (watcher first, then the serving
 * connection: a commit between the two shows in the next poll). Inside a transaction of
 * the serving connection its value stands still (the snapshot is held), so a turn that
 * needs it then cannot tell and answers undefined. A data_version costs about what
 * reading SQLite's `-shm` header did (docs/decisions.md, "Other processes on the SQLite file").
 *
 * Once per turn: a request handled in a turn arrived before it began or during it, so a
 * commit acknowledged before the request was sent is seen, short of one landing within
 * the same sub-millisecond turn. Without WAL the serving connection is asked each time.
 */
export function externalChanges(sqlite: SQLite.Database, file: string, inTransaction: () => boolean): ExternalChanges {
  const dataVersion = sqlite.prepare('PRAGMA data_version').pluck();
  if (file === ':memory:') return { poll: () => 0, close: () => {} };
  const watcher = watcherOf(sqlite, file);
  if (watcher === undefined) return { poll: () => (inTransaction() ? undefined : (dataVersion.get() as number)), close: () => {} };

  const watched = watcher.prepare('PRAGMA data_version').pluck();
  let seen = watched.get() as number;
  let lastVersion = dataVersion.get() as number;
  let changes = 0;
  let answer: number | undefined = 0;
  // Pending from the first poll of a turn to its check phase: the turn's answer stands.
  const turn = new TurnWork(() => {});
  return {
    poll() {
      if (turn.pending) return answer;
      turn.ask();
      const current = watched.get() as number;
      if (current === seen) return (answer = changes);
      if (inTransaction()) return (answer = undefined);
      seen = current;
      const version = dataVersion.get() as number;
      if (version !== lastVersion) {
        lastVersion = version;
        changes++;
      }
      return (answer = changes);
    },
    close: () => watcher.close(),
  };
}

/** A read-only connection on the same WAL file; none without WAL (a reader would block writers). */
function watcherOf(sqlite: SQLite.Database, file: string): SQLite.Database | undefined {
  if (sqlite.pragma('journal_mode', { simple: true }) !== 'wal') return undefined;
  try {
    return new SQLite(file, { readonly: true, fileMustExist: true });
  } catch {
    return undefined;
  }
}
