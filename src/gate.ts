/**
 * A small FIFO gate: at most `limit` async tasks at once, the rest wait in order. A task
 * that ends, however it ends, hands its place to the next in line, through `handOver`
 * (at once unless told otherwise).
 */
export class Gate {
  private active = 0;
  private waits = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly limit: number,
    private readonly handOver: (next: () => void) => void = (next) => next(),
  ) {}

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

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) {
      this.waits++;
      // The place is handed over by the task ending (below): `active` stays counted.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.active++;
    }
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) this.handOver(next);
      else this.active--;
    }
  }
}
