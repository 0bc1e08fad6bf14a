// The thread that runs SQLite's WAL checkpoints for the serving connection (src/db/checkpoints.ts).
// Plain JavaScript, so the same file runs from src/ (vitest, tsx) and, copied by
// scripts/copy-assets.mjs, from dist/. Its own connection to the file: a PASSIVE
// checkpoint copies what it can without waiting for readers or writers, and its fsyncs
// block this thread, not the event loop that serves requests.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const open = () => new SQLite(workerData.file, { fileMustExist: true });
const db = open();
db.pragma('busy_timeout = 5000');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
/**
 * Two connections that take turns holding a read transaction open. A write that finds
 * every frame copied starts the WAL over, and fsyncs its header, on the event loop,
 * several times a second at a moderate write rate (docs/decisions.md, "SQLite's
 * checkpoints in a thread"). SQLite does not start the WAL over while a reader holds a
 * snapshot of it, so one is always held until the WAL reaches its limit: the newer is
 * taken before the older is let go, and the checkpoint then copies up to it.
 */
const holders = [open(), open()];
const reads = holders.map((holder) => holder.prepare('SELECT 1 FROM sqlite_schema LIMIT 1'));
let held = -1;
let timer;

parentPort.on('message', (message) => {
  if (message === 'close') {
    clearTimeout(timer);
    letGo();
    for (const connection of [...holders, db]) connection.close();
    parentPort.close();
    return;
  }
  // 'checkpoint': asked once per write after the last one; the writes of the next
  // `delayMs` go into the same checkpoint (pages written again are copied once).
  timer = setTimeout(run, workerData.delayMs);
});

function run() {
  let frames = 0;
  try {
    // Held already: a checkpoint copies up to that snapshot, and a newer one is taken only if
    // there are frames past it (one taken when every frame is copied reads the database file
    // alone, and would not keep the WAL either); the checkpoint then copies up to the newer.
    let result = held < 0 ? undefined : checkpoint.get();
    if (!result || result.log > result.checkpointed) {
      holdNewer();
      result = checkpoint.get();
    }
    // Frames a reader's snapshot still needs stay in the WAL: tried again until all are copied.
    const { log, checkpointed } = result;
    if (checkpointed < log) return void (timer = setTimeout(run, workerData.delayMs));
    frames = log;
    // Long enough: the next write may start the WAL over (src/db/checkpoints.ts). The frames
    // written during the checkpoint above are copied here too, so that the serving
    // connection, which must copy the rest itself, copies and fsyncs a few pages, not that many.
    if (frames >= workerData.restartFrames) {
      letGo();
      checkpoint.get();
    }
  } catch {
    // Left for the next one: an unfinished checkpoint loses nothing (the WAL still holds the pages).
  }
  // Done: the frames the WAL held, all copied (src/db/checkpoints.ts starts a long WAL over).
  parentPort.postMessage(frames);
}

/** A snapshot of the WAL as it is now, held by the other connection, and the older one let go. */
function holdNewer() {
  const next = held === 0 ? 1 : 0;
  // Left in a transaction by a read that failed: ended before a new one begins.
  if (holders[next].inTransaction) holders[next].exec('COMMIT');
  holders[next].exec('BEGIN');
  reads[next].get();
  letGo(next);
  held = next;
}

/** Every snapshot held let go, but `keep`'s. */
function letGo(keep = -1) {
  holders.forEach((holder, i) => i !== keep && holder.inTransaction && holder.exec('COMMIT'));
  held = -1;
}
parentPort.postMessage('ready');
