import { describe, expect, it } from 'vitest';
import { RequestError } from '../../../src/graphql/operation/errors.js';
import { HeavyLine } from '../../../src/graphql/operation/heavy.js';

/** src/graphql/operation/heavy.ts: heavy operations take turns, first come first served. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('HeavyLine', () => {
  it('is heavy from its minimum cost up', () => {
    const line = new HeavyLine({ minCost: 500, concurrency: 1 });
    expect([line.isHeavy(499), line.isHeavy(500), line.isHeavy(5000)]).toEqual([false, true, true]);
  });

  it('runs `concurrency` at once and the rest in the order they came', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 2 });
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
    expect(line.stats).toMatchObject({ running: 2, waiting: 2, waited: 2, executed: 2 });
    gates[1]!.open();
    await runs[1];
    await new Promise((r) => setImmediate(r));
    expect(started).toEqual([0, 1, 2]);
    gates[0]!.open();
    gates[2]!.open();
    gates[3]!.open();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3]);
    expect(started).toEqual([0, 1, 2, 3]);
    expect(line.stats).toMatchObject({ running: 0, waiting: 0, waited: 2, executed: 4 });
  });

  it('hands the turn on in the next check phase: what waited for the loop meanwhile starts first', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 1 });
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
    const line = new HeavyLine({ minCost: 1, concurrency: 1 });
    const first = line.run(async () => {
      throw new Error('execution failed');
    });
    const second = line.run(async () => 'second ran');
    await expect(first).rejects.toThrow('execution failed');
    expect(await second).toBe('second ran');
    expect(line.stats).toMatchObject({ running: 0, waiting: 0, waited: 1, executed: 2 });
  });
});

/** The line is bounded (docs/limits.md, "Heavy operations"): length, wait, and clients that have gone. */
describe('HeavyLine bounds', () => {
  const overloaded = (error: unknown) => {
    expect(error).toBeInstanceOf(RequestError);
    const refusal = error as RequestError;
    expect([refusal.status, refusal.errors[0]!.extensions['code']]).toEqual([503, 'OVERLOADED']);
    expect(Number(refusal.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    return refusal;
  };

  it('refuses at once, without running it, an operation beyond `queue` waiting', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 1, queue: 2 });
    const hold = gate();
    const ran: number[] = [];
    const runs = [0, 1, 2].map((i) =>
      line.run(async () => {
        ran.push(i);
        if (i === 0) await hold.opened;
      }),
    );
    const refused = await line.run(async () => ran.push(3)).catch((e: unknown) => e);
    overloaded(refused);
    expect(line.stats).toMatchObject({ running: 1, waiting: 2, refused: { full: 1, timeout: 0, gone: 0 } });
    hold.open();
    await Promise.all(runs);
    expect(ran).toEqual([0, 1, 2]);
  });

  it('refuses an operation that waited longer than `waitMs`, and the turn passes on', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 1, waitMs: 20 });
    const hold = gate();
    const first = line.run(() => hold.opened);
    let ran = false;
    const late = line.run(async () => (ran = true)).catch((e: unknown) => e);
    overloaded(await late);
    expect(ran).toBe(false);
    hold.open();
    await first;
    // The line is free again: the next one runs at once.
    expect(await line.run(async () => 'next')).toBe('next');
    expect(line.stats).toMatchObject({ running: 0, waiting: 0, refused: { full: 0, timeout: 1, gone: 0 } });
  });

  it('drops a waiting operation whose client has gone, and never runs it', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 1 });
    const hold = gate();
    const first = line.run(() => hold.opened);
    const client = new AbortController();
    let ran = false;
    const abandoned = line.run(async () => (ran = true), client.signal).catch((e: unknown) => e);
    const after = line.run(async () => 'after');
    expect(line.stats.waiting).toBe(2);
    client.abort();
    expect(await abandoned).toBeInstanceOf(RequestError);
    expect(line.stats.waiting).toBe(1);
    hold.open();
    await first;
    expect(await after).toBe('after');
    expect(ran).toBe(false);
    expect(line.stats).toMatchObject({ running: 0, waiting: 0, executed: 2, refused: { full: 0, timeout: 0, gone: 1 } });
  });

  it('gives the turn on when its client went away during the hand-over', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 1 });
    const hold = gate();
    const first = line.run(() => hold.opened);
    const client = new AbortController();
    const abandoned = line.run(async () => 'never', client.signal).catch((e: unknown) => e);
    const after = line.run(async () => 'after');
    hold.open();
    await first;
    // The turn is on its way (next check phase) to the abandoned one: it passes it on.
    client.abort();
    expect(await abandoned).toBeInstanceOf(RequestError);
    expect(await after).toBe('after');
    expect(line.stats).toMatchObject({ running: 0, waiting: 0, executed: 2 });
  });

  it('refuses a request whose client had gone before it reached the line', async () => {
    const line = new HeavyLine({ minCost: 1, concurrency: 1 });
    const client = new AbortController();
    client.abort();
    let ran = false;
    expect(await line.run(async () => (ran = true), client.signal).catch((e: unknown) => e)).toBeInstanceOf(RequestError);
    expect(ran).toBe(false);
  });
});
