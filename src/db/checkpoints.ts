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
 *
 * SQLite starts the WAL over at a write that finds every frame copied, and fsyncs its
 * header then, on the event loop. The thread holds a read of the WAL between its
 * checkpoints, which keeps SQLite from doing so, until the WAL reaches `walLimitBytes`:
 * then it lets go and copies what was written meanwhile, the serving connection copies the
 * few frames since itself (two fsyncs on the event loop, once per limit written), its next
 * write starts the WAL over, and SQLite's `journal_size_limit` cuts the file back to that
 * size (docs/decisions.md, "SQLite's checkpoints in a thread").
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
  /** The WAL's length, in frames, from which it is started over. */
  private readonly restartFrames: number;

  constructor(
    private readonly sqlite: SQLite.Database,
    private readonly file: string,
    private readonly delayMs = CHECKPOINT_DELAY_MS,
    walLimitBytes = WAL_LIMIT_BYTES,
  ) {
    sqlite.pragma(`journal_size_limit = ${walLimitBytes}`);
    // A frame is a page and a 24-byte header.
    this.restartFrames = Math.ceil(walLimitBytes / ((sqlite.pragma('page_size', { simple: true }) as number) + 24));
  }

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

  /** Copies the frames written since the thread's checkpoint: the next write finds them all copied. */
  private startWalOver(): void {
    try {
      // PASSIVE never waits; the thread is idle now, until asked again.
      if (this.sqlite.open) this.sqlite.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Tried again at the thread's next report; the WAL only stays long meanwhile.
    }
  }

  private start(): Worker {
    const worker = new Worker(WORKER, { workerData: { file: this.file, delayMs: this.delayMs, restartFrames: this.restartFrames } });
    // Never what keeps the process alive; close() ends it.
    worker.unref();
    // 'ready', or the frames in the WAL when a checkpoint has copied them all.
    worker.on('message', (message: 'ready' | number) => {
      if (message === 'ready') return void this.sqlite.pragma('wal_autocheckpoint = 0');
      this.asked = false;
      if (message >= this.restartFrames) this.startWalOver();
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
/**
 * A WAL this long is started over, and its file cut back to it (SQLite's own threshold is
 * ~4 MiB, 1,000 pages). Each start-over holds the event loop 13–18 ms: at 16 MiB that was
 * twice a second at 2,100 writes a second (docs/decisions.md, "SQLite's checkpoints in a thread").
 */
const WAL_LIMIT_BYTES = 64 * 1024 * 1024;
/** The worker module, next to this one in src/ and in dist/ (scripts/copy-assets.mjs). */
const WORKER = new URL('./checkpoint-worker.mjs', import.meta.url);
