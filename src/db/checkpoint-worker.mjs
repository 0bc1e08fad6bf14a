// The thread that runs SQLite's WAL checkpoints for the serving connection (src/db/checkpoints.ts).
// Plain JavaScript, so the same file runs from src/ (vitest, tsx) and, copied by
// scripts/copy-assets.mjs, from dist/. Its own connection to the file: a PASSIVE
// checkpoint copies what it can without waiting for readers or writers, and its fsyncs
// block this thread, not the event loop that serves requests.
import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

const db = new SQLite(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let timer;

parentPort.on('message', (message) => {
  if (message === 'close') {
    clearTimeout(timer);
    db.close();
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
    // Frames a reader's snapshot still needs stay in the WAL: tried again until all are copied.
    const { log, checkpointed } = checkpoint.get();
    if (checkpointed < log) return void (timer = setTimeout(run, workerData.delayMs));
    frames = log;
  } catch {
    // Left for the next one: an unfinished checkpoint loses nothing (the WAL still holds the pages).
  }
  // Done: the frames the WAL held, all copied (src/db/checkpoints.ts starts a long WAL over).
  parentPort.postMessage(frames);
}
parentPort.postMessage('ready');
