import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { HASH_THREAD_NICE, PasswordHasher } from '../../src/auth/passwords.js';

/**
 * The hashing threads (docs/design-notes.md#hash-worker): a real worker module in a
 * piscina pool, at nice 19 and, where `chrt` exists, SCHED_IDLE; operations beyond the
 * pool's size wait their turn and all complete; a closed hasher refuses.
 */
const hasher = new PasswordHasher(4, 2);
afterAll(() => hasher.close());

/** This process's threads as (nice, policy) from /proc (Linux); policy 5 is SCHED_IDLE. */
function threads(tids = readdirSync('/proc/self/task')): { nice: number; policy: number }[] {
  return tids.flatMap((tid) => {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return [{ nice: Number(fields[16]), policy: Number(fields[38]) }];
    } catch {
      return []; // the thread ended meanwhile
    }
  });
}

describe('the hashing pool', () => {
  it('runs more operations than threads, each with its own answer', async () => {
    const passwords = Array.from({ length: 6 }, (_, i) => `password ${i}`);
    const hashes = await Promise.all(passwords.map((p) => hasher.hash(p)));
    expect(new Set(hashes).size).toBe(6);
    const checks = await Promise.all(passwords.map((p, i) => hasher.verify(p, hashes[(i + 1) % 6])));
    expect(checks).toEqual([false, false, false, false, false, false]);
    expect(await Promise.all(passwords.map((p, i) => hasher.verify(p, hashes[i])))).toEqual([true, true, true, true, true, true]);
  });

  it.runIf(existsSync('/proc/self/task'))('hashes on threads at nice 19, SCHED_IDLE where chrt exists', async () => {
    await hasher.hash('warm the threads');
    const lowered = threads().filter((t) => t.nice === HASH_THREAD_NICE);
    expect(lowered.length).toBeGreaterThanOrEqual(1);
    if (existsSync('/usr/bin/chrt') || existsSync('/bin/chrt')) expect(lowered.some((t) => t.policy === 5)).toBe(true);
    // The process's main thread keeps the normal priority.
    expect(threads([String(process.pid)])).toEqual([{ nice: 0, policy: 0 }]);
  });

  it('a closed hasher refuses', async () => {
    const closing = new PasswordHasher(4, 1);
    await closing.hash('start a thread');
    await closing.close();
    await expect(closing.hash('too late')).rejects.toThrow(/closed/);
  });
});
