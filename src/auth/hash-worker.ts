/**
 * The bcrypt worker thread, and the messages it exchanges with the pool in
 * passwords.ts. Each worker lowers its own thread to nice 19 (and SCHED_IDLE where
 * `chrt` is installed) and runs bcrypt's synchronous functions there, so hashing mostly
 * uses CPU that request serving leaves idle. It is plain JavaScript in a string, so it
 * runs the same from the sources and from dist/ (docs/design-notes.md#hash-worker).
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
