import { Gate } from '../../gate.js';

/**
 * Heavy operations take turns (docs/limits.md, "heavy operations"): an operation whose
 * cost is at least `minCost` executes only while fewer than `concurrency` others as
 * heavy do; the rest wait in one line, first come first served (a `Gate`). Cheaper
 * operations never wait in it, so a burst of large queries cannot hold up every other
 * caller on the one event loop, and the large ones finish one after another instead of
 * all late together.
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
  private readonly gate: Gate;

  constructor(
    readonly minCost: number,
    concurrency: number,
  ) {
    // The next heavy operation starts in the loop's next check phase, not the moment one
    // ends: the light executions that arrived meanwhile start first (docs/limits.md).
    this.gate = new Gate(concurrency, (next) => setImmediate(next));
  }

  isHeavy(cost: number): boolean {
    return cost >= this.minCost;
  }

  /** Runs `execute` when a turn is free; the turn is given back however it ends. */
  run<T>(execute: () => Promise<T>): Promise<T> {
    return this.gate.run(execute);
  }

  get stats(): HeavyStats {
    return { running: this.gate.running, waiting: this.gate.queued, waited: this.gate.waited };
  }
}
