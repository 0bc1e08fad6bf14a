/**
 * The bcrypt worker thread, and the messages it exchanges with the pool in
 * passwords.ts.
 *
 * Each worker first lowers its own thread's scheduling priority to nice 19 (Linux:
 * setpriority(PRIO_PROCESS, tid) applies to that one thread), then runs bcrypt's
 * *synchronous* functions on that thread. The asynchronous ones would hand the work to
 * libuv's thread pool, whose threads are shared with the rest of the process and keep
 * the normal priority. So hashing only uses CPU that request serving leaves idle: a
 * burst of logins cannot slow the event loop down much, while logins themselves wait
 * longer when the machine is busy. Where /proc/thread-self does not exist (macOS,
 * Windows) the worker keeps the normal priority and still hashes off the event loop.
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
}

export type HashRequest =
  | { id: number; op: 'hash'; password: string; cost: number }
  | { id: number; op: 'compare'; password: string; hash: string };

export type HashWorkerMessage =
  /** Sent once at start-up: the thread id and the nice value it now runs at (null when unknown). */
  | { type: 'ready'; tid: number | null; nice: number | null }
  | { type: 'result'; id: number; ok: true; value: string | boolean }
  | { type: 'result'; id: number; ok: false; error: { name: string; message: string } };

export const HASH_WORKER_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync, readlinkSync } = require('node:fs');
const { setPriority } = require('node:os');

// Lower this thread's priority (not the process's): /proc/thread-self -> "<pid>/task/<tid>".
let tid = null;
let nice = null;
try {
  tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
  if (Number.isInteger(tid) && tid > 0) {
    setPriority(tid, workerData.nice);
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    // Fields after the ")" that ends the thread name start at field 3; nice is field 19.
    nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  } else {
    tid = null;
  }
} catch {
  // No /proc/thread-self (not Linux) or setpriority refused: hash at the normal priority.
}

const bcrypt = require(workerData.bcryptPath);
parentPort.postMessage({ type: 'ready', tid, nice });

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
