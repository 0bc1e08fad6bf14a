/**
 * The bcrypt worker thread, and the messages it exchanges with the pool in
 * passwords.ts.
 *
 * Each worker first lowers its own thread's scheduling priority to nice 19 (Linux:
 * setpriority(PRIO_PROCESS, tid) applies to that one thread) and, where util-linux's
 * `chrt` is installed, moves the thread to the SCHED_IDLE policy, then runs bcrypt's
 * *synchronous* functions on that thread. The asynchronous ones would hand the work to
 * libuv's thread pool, whose threads are shared with the rest of the process and keep
 * the normal priority. So hashing mostly uses CPU that request serving leaves idle: a
 * burst of logins slows the event loop down little, while logins themselves wait
 * longer when the machine is busy.
 *
 * Why SCHED_IDLE too: with nice 19 alone, Linux's EEVDF scheduler still lets a hashing
 * thread finish its time slice before a woken event loop gets the CPU; under a login
 * burst the event loop then spent 24–30 % of the time waiting for a CPU (bench/login),
 * against 13–14 % with SCHED_IDLE, which the scheduler preempts at once for any normal
 * thread. Node has no API for sched_setscheduler, hence `chrt --idle -p 0 <tid>`
 * (unprivileged threads may always lower their own policy like this).
 *
 * Where /proc/thread-self does not exist (macOS, Windows) or `chrt` is missing, the
 * worker silently keeps what it could get (nice 19, or the normal priority) and still
 * hashes off the event loop.
 *
 * The worker is plain JavaScript in a string (`new Worker(source, { eval: true })`):
 * the same code then runs from the TypeScript sources (vitest, tsx) and from dist/,
 * without a loader for a .ts worker file. It loads bcrypt from the absolute path the
 * pool resolves (`workerData.bcryptPath`).
 */

/** The nice value hashing threads run at: the lowest priority there is. */
export const HASH_THREAD_NICE = 19;

export interface HashWorkerData {
  bcryptPath: string;
  nice: number;
  /** Also move the thread to SCHED_IDLE (Linux, with `chrt`). */
  schedIdle: boolean;
}

export type HashRequest =
  | { id: number; op: 'hash'; password: string; cost: number }
  | { id: number; op: 'compare'; password: string; hash: string };

export type HashWorkerMessage =
  /**
   * Sent once at start-up: the thread id, the nice value and the scheduling policy it now
   * runs at (`/proc` stat fields 19 and 41: 0 SCHED_OTHER, 5 SCHED_IDLE; null when unknown).
   */
  | { type: 'ready'; tid: number | null; nice: number | null; policy: number | null }
  | { type: 'result'; id: number; ok: true; value: string | boolean }
  | { type: 'result'; id: number; ok: false; error: { name: string; message: string } };

export const HASH_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync, readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');
const { execFileSync } = require('node:child_process');

// Lower this thread's priority (not the process's): /proc/thread-self -> "<pid>/task/<tid>".
// Each step may fail on its own (not Linux, no chrt, refused); hashing goes on regardless.
let tid = null;
let nice = null;
let policy = null;
try {
  const id = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(id) && id > 0) tid = id;
} catch {
  // no /proc/thread-self: not Linux
}
if (tid !== null) {
  try {
    setPriority(tid, workerData.nice);
  } catch {
    // refused: the normal priority
  }
  if (workerData.schedIdle) {
    for (const chrt of ['/usr/bin/chrt', '/bin/chrt']) {
      try {
        execFileSync(chrt, ['--idle', '-p', '0', String(tid)], { stdio: 'ignore', timeout: 5000 });
        break;
      } catch {
        // not there, or refused: nice alone
      }
    }
  }
  try {
    // Fields after the ")" that ends the thread name start at field 3: nice is field 19, policy 41.
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    nice = Number(fields[16]);
    policy = Number(fields[38]);
  } catch {
    // unknown
  }
}

const bcrypt = require(workerData.bcryptPath);
parentPort.postMessage({ type: 'ready', tid, nice, policy });

parentPort.on('message', (request) => {
  let reply;
  try {
    let value;
    if (request.op === 'hash') value = bcrypt.hashSync(request.password, request.cost);
    else if (request.op === 'compare') value = bcrypt.compareSync(request.password, request.hash);
    else throw new Error('unknown operation: ' + String(request.op));
    reply = { type: 'result', id: request.id, ok: true, value };
  } catch (error) {
    const name = error && typeof error.name === 'string' ? error.name : 'Error';
    const message = error && typeof error.message === 'string' ? error.message : String(error);
    reply = { type: 'result', id: request.id, ok: false, error: { name, message } };
  }
  parentPort.postMessage(reply);
});
`;
