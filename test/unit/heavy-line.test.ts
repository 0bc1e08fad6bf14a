import { describe, expect, it } from 'vitest';
import { HeavyLine } from '../../src/graphql/operation/heavy.js';

/** src/graphql/operation/heavy.ts: heavy operations take turns, first come first served. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('HeavyLine', () => {
  it('is heavy from its minimum cost up', () => {
    const line = new HeavyLine(500, 1);
    expect([line.isHeavy(499), line.isHeavy(500), line.isHeavy(5000)]).toEqual([false, true, true]);
  });

  it('runs `concurrency` at once and the rest in the order they came', async () => {
    const line = new HeavyLine(1, 2);
    const gates = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const runs = gates.map((g, i) =>
      line.run(async () => {
        started.push(i);
        await g.opened;
        return i;
      }),
    );
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1]);
    expect(line.stats).toEqual({ running: 2, waiting: 2, waited: 2 });
    gates[1]!.open();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.open();
    gates[2]!.open();
    gates[3]!.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(started).toEqual([0, 1, 2, 3]);
    expect(line.stats).toEqual({ running: 0, waiting: 0, waited: 2 });
  });

  it('hands the turn on in the next check phase: what waited for the loop meanwhile starts first', async () => {
    const line = new HeavyLine(1, 1);
    const order: string[] = [];
    const first = line.run(async () => {
      // A light execution that arrived while this heavy one ran: it waits for the check phase.
      setImmediate(() => order.push('light'));
      order.push('heavy 1');
    });
    const second = line.run(async () => {
      order.push('heavy 2');
    });
    await Promise.all([first, second]);
    expect(order).toEqual(['heavy 1', 'light', 'heavy 2']);
  });

  it('an execution that fails gives its turn to the next, and its caller gets the error', async () => {
    const line = new HeavyLine(1, 1);
    const first = line.run(async () => {
      throw new Error('execution failed');
    });
    const second = line.run(async () => 'second ran');
    await expect(first).rejects.toThrow('execution failed');
    expect(await second).toBe('second ran');
    expect(line.stats).toEqual({ running: 0, waiting: 0, waited: 1 });
  });
});
