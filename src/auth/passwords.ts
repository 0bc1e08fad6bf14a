import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { charCount } from '../domain/validate.js';
import { HASH_THREAD_NICE, HASH_WORKER_SOURCE, type HashRequest, type HashWorkerData, type HashWorkerMessage } from './hash-worker.js';

/**
 * Password hashing with bcrypt, in a small pool of worker threads (hash-worker.ts) at
 * the lowest scheduling priority, never on the event loop: a burst of logins slows
 * logins down, not the queries served meanwhile. Passwords over the 72 bytes bcrypt
 * reads are refused, never truncated (docs/design-notes.md#password-hashing).
 */

export const MIN_PASSWORD_CHARS = 8;
export const MAX_PASSWORD_BYTES = 72;

/** Why a new password is refused, or null when it is acceptable. */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== 'string' || password.length === 0) return 'password is required';
  // The native binding reads C strings: a NUL would end the password early.
  if (password.includes('\u0000')) return 'password must not contain the NUL character';
  if (charCount(password) < MIN_PASSWORD_CHARS) return `password must be at least ${MIN_PASSWORD_CHARS} characters`;
  if (Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES) return `password must be at most ${MAX_PASSWORD_BYTES} bytes`;
  return null;
}

/** A password bcrypt can compare exactly (anything else can never be right). */
function isComparable(password: string): boolean {
  return password.length > 0 && !password.includes('\u0000') && Buffer.byteLength(password, 'utf8') <= MAX_PASSWORD_BYTES;
}

/** The cost a bcrypt hash was made with (`$2b$12$…` → 12), or undefined for something else. */
export function costOf(hash: string): number | undefined {
  const match = /^\$2[aby]\$(\d{2})\$/.exec(hash);
  return match ? Number(match[1]) : undefined;
}

/** A hashing thread as it reported itself: policy 0 is SCHED_OTHER, 5 SCHED_IDLE. */
export type HashThread = { tid: number | null; nice: number | null; policy: number | null };

type Job = {
  request: HashRequest;
  resolve: (value: string | boolean) => void;
  reject: (error: Error) => void;
};

type PoolWorker = {
  worker: Worker;
  job: Job | undefined;
  /** The worker's thread id, nice value and scheduling policy, once it has reported them. */
  tid: number | null;
  nice: number | null;
  policy: number | null;
};

/**
 * bcrypt worker threads (hash-worker.ts), at most `size` of them, started on first use.
 * Each runs one operation at a time; the others wait in a FIFO queue. An idle worker is
 * unref'ed so it never keeps the process alive; a busy one is ref'ed until it answers.
 * A worker that dies fails its operation and is replaced by the next one.
 */
export class HashPool {
  private readonly workers = new Set<PoolWorker>();
  private readonly idle: PoolWorker[] = [];
  private readonly queue: Job[] = [];
  private nextId = 1;
  private closed = false;
  private bcryptPath: string | undefined;

  /**
   * `options.nice`: the hashing threads' nice value (default 19); `options.schedIdle`:
   * also move them to SCHED_IDLE where `chrt` exists (default true; see hash-worker.ts).
   */
  constructor(
    readonly size: number,
    private readonly options: { nice?: number; schedIdle?: boolean } = {},
  ) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`hash pool size must be a positive integer, not ${size}`);
  }

  /** Operations waiting for a free worker. */
  get queued(): number {
    return this.queue.length;
  }

  /** The live workers' thread ids, nice values and policies (null until reported, or where unknown). */
  threads(): HashThread[] {
    return [...this.workers].map(({ tid, nice, policy }) => ({ tid, nice, policy }));
  }

  hash(password: string, cost: number): Promise<string> {
    return this.run({ id: this.nextId++, op: 'hash', password, cost }) as Promise<string>;
  }

  compare(password: string, hash: string): Promise<boolean> {
    return this.run({ id: this.nextId++, op: 'compare', password, hash }) as Promise<boolean>;
  }

  /** Stops every worker; queued and running operations fail. Later calls fail too. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error('password hasher closed'));
    const workers = [...this.workers];
    this.workers.clear();
    this.idle.length = 0;
    for (const entry of workers) this.fail(entry, new Error('password hasher closed'));
    await Promise.all(workers.map(({ worker }) => worker.terminate()));
  }

  private run(request: HashRequest): Promise<string | boolean> {
    if (this.closed) return Promise.reject(new Error('password hasher closed'));
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.dispatch();
    });
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      const entry = this.idle.pop() ?? (this.workers.size < this.size ? this.spawn() : undefined);
      if (!entry) return;
      const job = this.queue.shift()!;
      entry.job = job;
      entry.worker.ref();
      entry.worker.postMessage(job.request);
    }
  }

  private spawn(): PoolWorker {
    this.bcryptPath ??= createRequire(import.meta.url).resolve('bcrypt');
    const workerData: HashWorkerData = {
      bcryptPath: this.bcryptPath,
      nice: this.options.nice ?? HASH_THREAD_NICE,
      schedIdle: this.options.schedIdle ?? true,
    };
    const worker = new Worker(HASH_WORKER_SOURCE, { eval: true, workerData });
    worker.unref();
    const entry: PoolWorker = { worker, job: undefined, tid: null, nice: null, policy: null };
    this.workers.add(entry);

    worker.on('message', (message: HashWorkerMessage) => {
      if (message.type === 'ready') {
        entry.tid = message.tid;
        entry.nice = message.nice;
        entry.policy = message.policy;
        return;
      }
      const job = entry.job;
      if (!job || job.request.id !== message.id) return;
      entry.job = undefined;
      worker.unref();
      if (message.ok) job.resolve(message.value);
      else job.reject(Object.assign(new Error(message.error.message), { name: message.error.name }));
      if (this.workers.has(entry)) this.idle.push(entry);
      this.dispatch();
    });
    worker.on('error', (error) => this.retire(entry, error));
    worker.on('exit', (code) => this.retire(entry, new Error(`password hashing worker exited (code ${code})`)));
    return entry;
  }

  /** A worker that failed or exited: out of the pool, its operation failed, the queue moves on. */
  private retire(entry: PoolWorker, error: Error): void {
    if (this.workers.delete(entry)) {
      const at = this.idle.indexOf(entry);
      if (at >= 0) this.idle.splice(at, 1);
      void entry.worker.terminate();
    }
    this.fail(entry, error);
    this.dispatch();
  }

  private fail(entry: PoolWorker, error: Error): void {
    const job = entry.job;
    entry.job = undefined;
    entry.worker.unref();
    job?.reject(error);
  }
}

/** bcrypt operations at once by default: one per core (the threads yield to request serving). */
export function defaultHashConcurrency(): number {
  return Math.max(1, availableParallelism());
}

export class PasswordHasher {
  private dummy: Promise<string> | undefined;
  private readonly pool: HashPool;

  constructor(
    readonly cost: number,
    concurrency?: number,
  ) {
    this.pool = new HashPool(concurrency ?? defaultHashConcurrency());
  }

  hash(password: string): Promise<string> {
    return this.pool.hash(password, this.cost);
  }

  /**
   * Compares a login attempt with a stored hash. Without a hash (unknown email, or an
   * account that only signs in externally) it compares with a dummy hash of the same
   * cost, so every failure takes the same time and timing does not reveal accounts.
   */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    const comparable = isComparable(password);
    const target = hash && comparable ? hash : await this.dummyHash();
    const matched = await this.pool.compare(comparable ? password : 'x', target);
    return matched && comparable && Boolean(hash);
  }

  /** True when a stored hash was made at a lower cost than today's: re-hash it at the next login. */
  needsRehash(hash: string): boolean {
    const cost = costOf(hash);
    return cost === undefined || cost < this.cost;
  }

  /** The hashing threads' ids, nice values and scheduling policies (diagnostics). */
  threads(): HashThread[] {
    return this.pool.threads();
  }

  /** Stops the hashing threads (the app's onClose). */
  close(): Promise<void> {
    return this.pool.close();
  }

  private dummyHash(): Promise<string> {
    // Made once, lazily, at the configured cost, from a random password nobody knows.
    this.dummy ??= this.pool.hash(randomBytes(18).toString('base64url'), this.cost).catch((error: unknown) => {
      this.dummy = undefined;
      throw error;
    });
    return this.dummy;
  }
}
