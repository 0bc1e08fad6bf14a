import { TurnWork, nextCheckPhase } from '../../turn.js';

/**
 * Executions start in the event loop's check phase, SLICE_MS of them per loop iteration;
 * the rest wait for the next iteration, first in line (docs/decisions.md, "a lean miss
 * path"). libuv accepts one new connection per iteration, and with SQLite an execution
 * never waits for I/O: one iteration running every pending execution back to back
 * lasted seconds under load, and connections opened meanwhile waited that long.
 * Response-cache hits are answered in the same slices (./core.ts), so that the answers
 * of a turn are written together (docs/decisions.md, "Hits are answered in a slice too").
 */
const SLICE_MS = 10;

const waiting: (() => void)[] = [];
/** When this check phase's first execution started; undefined until one does. */
let sliceStart: number | undefined;
/** Asked in a check phase, it runs first in the next iteration's: a new slice. */
const sliceEnd = new TurnWork(() => {
  sliceStart = undefined;
});

/** Resolves when the caller may start its execution (first come, first served). */
export function nextSlice(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    nextCheckPhase(step);
  });
}

/**
 * One per waiter. Node runs the microtasks between two immediates, so with SQLite the
 * execution started by one step is over before the next step looks at the clock.
 */
function step(): void {
  sliceEnd.ask();
  const now = performance.now();
  sliceStart ??= now;
  if (now - sliceStart >= SLICE_MS) {
    nextCheckPhase(step);
    return;
  }
  waiting.shift()?.();
}
