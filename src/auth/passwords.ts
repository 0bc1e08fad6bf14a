import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { charCount } from '../domain/validate.js';

/**
 * Password hashing with bcrypt, in a small piscina pool of worker threads
 * (hash-worker.mjs) at the lowest scheduling priority, never on the event loop: a burst
 * of logins slows logins down, not the queries served meanwhile. Passwords over the 72
 * bytes bcrypt reads are refused, never truncated (docs/design-notes.md#password-hashing).
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

/** bcrypt operations at once by default: one per core (the threads yield to request serving). */
export function defaultHashConcurrency(): number {
  return Math.max(1, availableParallelism());
}

/** The nice value hashing threads run at: the lowest priority there is. */
export const HASH_THREAD_NICE = 19;

/** The worker module, next to this one in src/ and in dist/ (scripts/copy-assets.mjs). */
const HASH_WORKER = fileURLToPath(new URL('./hash-worker.mjs', import.meta.url));

/** What hash-worker.mjs does: a hash is answered with the hash, a comparison with a boolean. */
type HashTask = { op: 'hash'; password: string; cost: number } | { op: 'compare'; password: string; hash: string };

/** What the hashing pool has done and holds, read by /metrics (src/observability/metrics.ts). */
export interface HashStats {
  hashed: number;
  compared: number;
  waiting: number;
}

export class PasswordHasher {
  private dummy: Promise<string> | undefined;
  private hashed = 0;
  private compared = 0;
  private readonly pool: Piscina<HashTask, string | boolean>;
  private closed = false;

  constructor(
    readonly cost: number,
    concurrency?: number,
  ) {
    const threads = concurrency ?? defaultHashConcurrency();
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`hash pool size must be a positive integer, not ${threads}`);
    this.pool = new Piscina({
      filename: HASH_WORKER,
      // At most `threads` operations at once (BCRYPT_CONCURRENCY), one per thread; the
      // others wait in piscina's FIFO queue. Threads start on first use and stay; an idle
      // one never keeps the process alive. One that dies fails its operation and is replaced.
      minThreads: 0,
      maxThreads: threads,
      concurrentTasksPerWorker: 1,
      idleTimeout: Infinity,
      // nice 19 for each hashing thread only, and SCHED_IDLE where `chrt` exists (docs/design-notes.md#hash-worker).
      niceIncrement: HASH_THREAD_NICE,
      workerData: { schedIdle: true },
    });
  }

  hash(password: string): Promise<string> {
    return this.run({ op: 'hash', password, cost: this.cost }) as Promise<string>;
  }

  /**
   * Compares a login attempt with a stored hash. Without a hash (unknown email, or an
   * account that only signs in externally) it compares with a dummy hash of the same
   * cost, so every failure takes the same time and timing does not reveal accounts.
   */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    const comparable = isComparable(password);
    const target = hash && comparable ? hash : await this.dummyHash();
    const matched = (await this.run({ op: 'compare', password: comparable ? password : 'x', hash: target })) as boolean;
    return matched && comparable && Boolean(hash);
  }

  /** True when a stored hash was made at a lower cost than today's: re-hash it at the next login. */
  needsRehash(hash: string): boolean {
    const cost = costOf(hash);
    return cost === undefined || cost < this.cost;
  }

  get stats(): HashStats {
    return { hashed: this.hashed, compared: this.compared, waiting: this.pool.queueSize };
  }

  /** Stops the hashing threads (the app's onClose); queued and running operations fail, later ones too. */
  close(): Promise<void> {
    this.closed = true;
    return this.pool.destroy();
  }

  private run(task: HashTask): Promise<string | boolean> {
    if (this.closed) return Promise.reject(new Error('password hasher closed'));
    if (task.op === 'hash') this.hashed++;
    else this.compared++;
    return this.pool.run(task);
  }

  private dummyHash(): Promise<string> {
    // Made once, lazily, at the configured cost, from a random password nobody knows.
    this.dummy ??= this.hash(randomBytes(18).toString('base64url')).catch((error: unknown) => {
      this.dummy = undefined;
      throw error;
    });
    return this.dummy;
  }
}
