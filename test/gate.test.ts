import { describe, expect, it } from 'vitest';
import { Gate } from '../src/gate.js';

/** src/gate.ts: at most `limit` tasks at once, the rest in order (the heavy operations' line is one). */
describe('Gate', () => {
  it('runs at most `limit` tasks at once (the rest wait in order)', async () => {
    const gate = new Gate(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        gate.run(async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((r) => setTimeout(r, 5));
          order.push(i);
          running--;
        }),
      ),
    );
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
