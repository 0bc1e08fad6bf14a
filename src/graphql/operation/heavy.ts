/**
 * Heavy operations take turns (docs/limits.md, "heavy operations"): an operation whose
 * cost is at least `minCost` executes only while fewer than `concurrency` others as
 * heavy do; the rest wait in one line, first come first served. Cheaper operations
 * never wait in it, so a burst of large queries cannot hold up every other caller on
 * the one event loop, and the large ones finish one after another instead of all late
 * together.
 */
export interface HeavyStats {
  /** Heavy operations executing now. */
  readonly running: number;
  /** Heavy operations waiting for their turn. */
  readonly waiting: number;
  /** Heavy operations that had to wait, since start. */
  readonly waited: number;
}

export class HeavyLine {
  private running = 0;
  private waited = 0;
  private readonly line: (() => void)[] = [];

  constructor(
    readonly minCost: number,
    private readonly concurrency: number,
  ) {}

  isHeavy(cost: number): boolean {
    return cost >= this.minCost;
  }

  /** Runs `execute` when a turn is free; the turn is given back however it ends. */
  async run<T>(execute: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      this.waited++;
      // The turn is handed over by the one ending (below): `running` stays counted.
      await new Promise<void>((resolve) => this.line.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await execute();
    } finally {
      const next = this.line.shift();
      if (next) next();
      else this.running--;
    }
  }

  get stats(): HeavyStats {
    return { running: this.running, waiting: this.line.length, waited: this.waited };
  }
}
