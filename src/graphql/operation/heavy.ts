import { nextCheckPhase } from '../../turn.js';
import { Gate, GateRefusal } from '../../gate.js';
import { Overloaded } from './errors.js';

/**
 * Heavy operations take turns (docs/limits.md, "Heavy operations"): an operation whose
 * cost is at least `minCost` executes only while fewer than `concurrency` others as
 * heavy do; the rest wait in one line, first come first served (a `Gate`). Cheaper
 * operations never wait in it, so a burst of large queries cannot hold up every other
 * caller on the one event loop, and the large ones finish one after another instead of
 * all late together.
 *
 * The line is bounded: at most `maxWaiting` wait, each at most `maxWaitMs`; beyond, the
 * request is refused at once with 503 `OVERLOADED` and a `Retry-After` from how long the
 * line takes to clear. A request whose client has gone leaves the line unexecuted.
 */
export interface HeavyStats {
  /** Heavy operations executing now. */
  readonly running: number;
  /** Heavy operations waiting for their turn. */
  readonly waiting: number;
  /** Heavy operations that had to wait, since start. */
  readonly waited: number;
  /** Heavy operations that began to execute, since start. */
  readonly executed: number;
  /** Heavy operations refused with 503 (line full, waited too long) or dropped (client gone), since start. */
  readonly refused: { readonly full: number; readonly timeout: number; readonly gone: number };
}

export interface HeavyLineOptions {
  minCost: number;
  concurrency: number;
  /** How many may wait (QUERY_HEAVY_QUEUE). */
  queue?: number;
  /** How long one may wait, in ms (QUERY_HEAVY_WAIT_MS). */
  waitMs?: number;
}

/** The first guess of a heavy execution's duration, before one has been measured. */
const INITIAL_ESTIMATE_MS = 100;

export class HeavyLine {
  readonly minCost: number;
  private readonly concurrency: number;
  private readonly gate: Gate;
  /** A moving average of heavy executions' durations: the `Retry-After` estimate. */
  private averageMs = INITIAL_ESTIMATE_MS;

  constructor(options: HeavyLineOptions) {
    this.minCost = options.minCost;
    this.concurrency = options.concurrency;
    // The next heavy operation starts in the loop's next check phase, not the moment one
    // ends: the light executions that arrived meanwhile start first (docs/limits.md).
    this.gate = new Gate(options.concurrency, {
      maxWaiting: options.queue,
      maxWaitMs: options.waitMs,
      handOver: nextCheckPhase,
    });
  }

  isHeavy(cost: number): boolean {
    return cost >= this.minCost;
  }

  /**
   * Runs `execute` when a turn is free; the turn is given back however it ends. Throws a
   * RequestError (503 OVERLOADED) when the line refuses it; `signal` aborts once the
   * client has gone.
   */
  async run<T>(execute: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    try {
      return await this.gate.run(() => this.timed(execute), signal);
    } catch (error) {
      if (error instanceof GateRefusal) throw this.overloaded(error.reason);
      throw error;
    }
  }

  get stats(): HeavyStats {
    const { full, timeout, aborted } = this.gate.refused;
    return {
      running: this.gate.running,
      waiting: this.gate.queued,
      waited: this.gate.waited,
      executed: this.gate.started,
      refused: { full, timeout, gone: aborted },
    };
  }

  private async timed<T>(execute: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await execute();
    } finally {
      this.averageMs = 0.8 * this.averageMs + 0.2 * (performance.now() - started);
    }
  }

  private overloaded(reason: GateRefusal['reason']) {
    // The time the line ahead needs to clear, in whole seconds (at least one).
    const ahead = this.gate.queued + this.gate.running;
    const seconds = Math.max(1, Math.ceil((ahead * this.averageMs) / this.concurrency / 1000));
    const message = reason === 'full' ? 'Too many heavy operations are waiting' : 'A heavy operation waited too long for its turn';
    return new Overloaded(`Server overloaded: ${message}; retry later`, seconds);
  }
}
