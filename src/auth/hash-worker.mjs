// The bcrypt worker thread of the hashing pool in passwords.ts (docs/design-notes.md#hash-worker).
// Plain JavaScript, so the same file runs from src/ (vitest, tsx) and, copied by
// scripts/copy-assets.mjs, from dist/. piscina has already lowered this thread to nice 19
// (its `niceIncrement`); here it also moves to SCHED_IDLE where util-linux's `chrt` is
// installed, then runs bcrypt's synchronous functions, so hashing mostly uses CPU that
// request serving leaves idle.
import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import bcrypt from 'bcrypt';
import { workerData } from 'piscina';

/** SCHED_IDLE for this thread only: its id is the last part of /proc/thread-self ("<pid>/task/<tid>"). */
function schedIdle() {
  let tid;
  try {
    tid = readlinkSync('/proc/thread-self').split('/').pop();
  } catch {
    return; // not Linux: nice alone
  }
  for (const chrt of ['/usr/bin/chrt', '/bin/chrt']) {
    try {
      execFileSync(chrt, ['--idle', '-p', '0', tid], { stdio: 'ignore', timeout: 5000 });
      return;
    } catch {
      // not there, or refused: nice alone
    }
  }
}

if (workerData?.schedIdle) schedIdle();

/**
 * One operation: `{op: 'hash', password, cost}` → the hash, `{op: 'compare', password,
 * hash}` → whether it matches. An error is thrown back to the caller by piscina.
 * @param {{ op: 'hash', password: string, cost: number } | { op: 'compare', password: string, hash: string }} task
 * @returns {string | boolean}
 */
export default function hashTask(task) {
  if (task.op === 'hash') return bcrypt.hashSync(task.password, task.cost);
  if (task.op === 'compare') return bcrypt.compareSync(task.password, task.hash);
  throw new Error(`unknown operation: ${String(task.op)}`);
}
