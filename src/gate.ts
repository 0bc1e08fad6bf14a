/**
 * A small FIFO gate: at most `limit` async tasks at once, the rest wait in order. A task
 * that ends, however it ends, hands its place to the next in line, through `handOver`
 * (at once unless told otherwise).
 *
 * The line is bounded (docs/limits.md, "Heavy operations"): at most `maxWaiting` wait,
 * each at most `maxWaitMs`, and a waiter whose `signal` aborts (its client has gone)
 * leaves the line at once. Each refusal rejects with a `GateRefusal` saying why; the
 * task is then never run.
 */
export type RefusalReason = 'full' | 'timeout' | 'aborted';

export class GateRefusal extends Error {
  constructor(readonly reason: RefusalReason) {
    super(`gate refused a task: ${reason}`);
    this.name = 'GateRefusal';
  }
}

export interface GateOptions {
  /** How many may wait; beyond, `run` refuses at once ('full'). Default: no bound. */
  maxWaiting?: number;
  /** How long one may wait; then it is refused ('timeout'). Default: no bound. */
  maxWaitMs?: number;
  /** How a place passes to the next in line (default: at once). */
  handOver?: (next: () => void) => void;
}

interface Waiter {
  admit(): void;
  refuse(reason: RefusalReason): void;
}

export class Gate {
  private active = 0;
  private waits = 0;
  private admissions = 0;
  private readonly refusals: Record<RefusalReason, number> = { full: 0, timeout: 0, aborted: 0 };
  private readonly waiting: Waiter[] = [];
  private readonly maxWaiting: number;
  private readonly maxWaitMs: number;
  private readonly handOver: (next: () => void) => void;

  constructor(
    readonly limit: number,
    options: GateOptions = {},
  ) {
    this.maxWaiting = options.maxWaiting ?? Infinity;
    this.maxWaitMs = options.maxWaitMs ?? Infinity;
    this.handOver = options.handOver ?? ((next) => next());
  }

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  /** Tasks waiting for a place. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Tasks that had to wait, since the gate was made. */
  get waited(): number {
    return this.waits;
  }

  /** Tasks that began to run, since the gate was made. */
  get started(): number {
    return this.admissions;
  }

  /** Tasks refused, by reason, since the gate was made. */
  get refused(): Readonly<Record<RefusalReason, number>> {
    return this.refusals;
  }

  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (signal?.aborted) throw this.refusal('aborted');
    if (this.active >= this.limit) {
      if (this.waiting.length >= this.maxWaiting) throw this.refusal('full');
      this.waits++;
      // The place is handed over by the task ending (below): `active` stays counted.
      await this.wait(signal);
    } else {
      this.active++;
    }
    try {
      // Admitted, but its client went away meanwhile: the turn passes on unused.
      if (signal?.aborted) throw this.refusal('aborted');
      this.admissions++;
      return await task();
    } finally {
      this.release();
    }
  }

  private wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = () => {
        settled = true;
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter: Waiter = {
        admit: () => {
          // Refused while its hand-over was on the way: the place goes to the next.
          if (settled) return this.release();
          settle();
          resolve();
        },
        refuse: (reason) => {
          if (settled) return;
          settle();
          const at = this.waiting.indexOf(waiter);
          if (at >= 0) this.waiting.splice(at, 1);
          reject(this.refusal(reason));
        },
      };
      const onAbort = () => waiter.refuse('aborted');
      if (Number.isFinite(this.maxWaitMs)) timer = setTimeout(() => waiter.refuse('timeout'), this.maxWaitMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) this.handOver(() => next.admit());
    else this.active--;
  }

  private refusal(reason: RefusalReason): GateRefusal {
    this.refusals[reason]++;
    return new GateRefusal(reason);
  }
}
