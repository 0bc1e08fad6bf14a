import { Worker } from 'node:worker_threads';
import type SQLite from 'better-sqlite3';

/**
 * SQLite's WAL checkpoints off the event loop (docs/decisions.md, "SQLite's checkpoints in a
 * thread"). By default the connection that commits runs them, every 1,000 pages, fsyncs
 * included, inside some request. Here a worker thread with its own connection runs them
 * (./checkpoint-worker.mjs) and the serving connection's automatic ones are off.
 *
 * The thread starts with the first write and waits for writes: asked once, it checkpoints
 * `delayMs` later and says so, and the next write asks again. An idle service wakes nothing.
 * If the thread fails, the serving connection checkpoints as before.
 */
export class Checkpoints {
  private worker: Worker | undefined;
  private exited: Promise<void> | undefined;
  /** A checkpoint is asked for and not yet done. */
  private asked = false;
  /** Writing statements run, and their count when the checkpoint under way was asked for. */
  private writes = 0;
  private askedAt = 0;
  private stopped = false;

  constructor(
    private readonly sqlite: SQLite.Database,
    private readonly file: string,
    private readonly delayMs = CHECKPOINT_DELAY_MS,
  ) {}

  /** A statement that writes is about to run. */
  wrote(): void {
    this.writes++;
    if (!this.asked && !this.stopped) this.ask();
  }

  private ask(): void {
    this.asked = true;
    this.askedAt = this.writes;
    (this.worker ??= this.start()).postMessage('checkpoint');
  }

  async close(): Promise<void> {
    this.stopped = true;
    // Referenced again: the process waits for the thread to close its connection.
    this.worker?.ref();
    this.worker?.postMessage('close');
    await this.exited;
  }

  private start(): Worker {
    const worker = new Worker(WORKER, { workerData: { file: this.file, delayMs: this.delayMs } });
    // Never what keeps the process alive; close() ends it.
    worker.unref();
    worker.on('message', (message: 'ready' | 'done') => {
      if (message === 'ready') return void this.sqlite.pragma('wal_autocheckpoint = 0');
      this.asked = false;
      // Writes since the ask may have come after the checkpoint began: they get one of their own.
      if (this.writes !== this.askedAt && !this.stopped) this.ask();
    });
    // Cannot start or died: the serving connection checkpoints again, as SQLite does by default.
    worker.on('error', () => {});
    this.exited = new Promise((resolve) =>
      worker.once('exit', () => {
        this.stopped = true;
        if (this.sqlite.open) this.sqlite.pragma(`wal_autocheckpoint = ${SQLITE_DEFAULT_AUTOCHECKPOINT}`);
        resolve();
      }),
    );
    return worker;
  }
}

/** How long after a write its checkpoint runs; the writes meanwhile join it. */
export const CHECKPOINT_DELAY_MS = 100;
const SQLITE_DEFAULT_AUTOCHECKPOINT = 1000;
/** The worker module, next to this one in src/ and in dist/ (scripts/copy-assets.mjs). */
const WORKER = new URL('./checkpoint-worker.mjs', import.meta.url);
