/**
 * The one event-loop-turn primitive (docs/design-notes.md#event-loop-turns). Work asked
 * for while a turn runs is done once, together, in that turn's check phase: after the
 * poll phase has read every request that arrived, before the loop waits again. Its rule:
 *
 * - whatever joins a turn's work joins it before the work starts, never after, so a
 *   caller that took its cache versions before asking still took them before the read
 *   (docs/caching.md, "The rule");
 * - one turn's work never waits for another turn: a request is at most one check phase
 *   later than it would have been alone.
 *
 * Users: shared statements across requests (src/db/shared-batch.ts), one Redis pipeline
 * per turn (src/store/redis-turn.ts), the external-change poll (src/cache/external-changes.ts),
 * the heavy line's hand-over (src/graphql/operation/heavy.ts) and execution slices
 * (src/graphql/operation/slices.ts).
 */
export class TurnWork {
  private asked = false;

  constructor(private readonly work: () => void) {}

  /** Asks for the work in this turn's check phase; asking again in the same turn joins it. */
  ask(): void {
    if (this.asked) return;
    this.asked = true;
    setImmediate(this.run);
  }

  /** True from the first ask of a turn until its work runs. */
  get pending(): boolean {
    return this.asked;
  }

  private readonly run = (): void => {
    this.asked = false;
    this.work();
  };
}

/** Runs `next` in this turn's check phase: what arrived meanwhile has started first. */
export function nextCheckPhase(next: () => void): void {
  setImmediate(next);
}

/**
 * The promise `start` returns; one that throws instead rejects it. A turn's work runs in an
 * immediate, where a throw would fail the process rather than the callers waiting on it.
 */
export function started<T>(start: () => Promise<T>): Promise<T> {
  try {
    return start();
  } catch (error) {
    return Promise.reject(error as Error);
  }
}
