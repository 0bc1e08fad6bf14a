import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { charCount } from '../domain/validate.js';
import { HASH_THREAD_NICE, HASH_WORKER_SOURCE, type HashRequest, type HashWorkerData, type HashWorkerMessage } from './hash-worker.js';

/**
 * Password hashing with bcrypt. Hashing and comparing run in a small pool of worker
 * threads (hash-worker.ts) that run at the lowest scheduling priority (nice 19, Linux),
 * never on the event loop: hashing uses the CPU that request serving leaves idle, so a
 * burst of logins slows logins down, not the queries served meanwhile. bcrypt only
 * reads the first 72 bytes of a password, so longer ones are refused instead of
 * silently truncated — at registration and at login, where a longer password would
 * otherwise match a stored 72-byte one.
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

/**
 * A small FIFO gate: at most `limit` bcrypt operations at once. bcrypt at cost 12 is
 * ~240 ms of CPU; on a two-core machine, letting every login hash at once would take
 * both cores from the event loop. With the gate, hashing uses at most (cores − 1).
 */
export class Gate {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  get queued(): number {
    return this.waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export class PasswordHasher {
  private dummy: Promise<string> | undefined;
  private readonly gate: Gate;

  constructor(
    readonly cost: number,
    concurrency?: number,
  ) {
    this.gate = new Gate(concurrency ?? Math.max(1, availableParallelism() - 1));
  }

  hash(password: string): Promise<string> {
    return this.gate.run(() => bcrypt.hash(password, this.cost));
  }

  /**
   * Compares a login attempt with a stored hash. Without a hash (unknown email, or an
   * account that only signs in externally) it compares with a dummy hash of the same
   * cost, so every failure takes the same time and timing does not reveal accounts.
   */
  async verify(password: string, hash: string | null | undefined): Promise<boolean> {
    const comparable = isComparable(password);
    const target = hash && comparable ? hash : await this.dummyHash();
    const matched = await this.gate.run(() => bcrypt.compare(comparable ? password : 'x', target));
    return matched && comparable && Boolean(hash);
  }

  /** True when a stored hash was made at a lower cost than today's: re-hash it at the next login. */
  needsRehash(hash: string): boolean {
    const cost = costOf(hash);
    return cost === undefined || cost < this.cost;
  }

  private dummyHash(): Promise<string> {
    // Made once, lazily, at the configured cost, from a random password nobody knows.
    this.dummy ??= bcrypt.hash(randomBytes(18).toString('base64url'), this.cost);
    return this.dummy;
  }
}
