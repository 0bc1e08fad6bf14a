// A diagnostic loaded into a service under test (not part of any measurement):
//   node bench/diagnostics/sequence.mjs --env=NODE_OPTIONS=--require=$PWD/bench/diagnostics/stall-probe.cjs --env=PROBE_DIR=DIR
// What the serving thread is doing while its event loop is stalled. The main thread stamps
// a shared clock every 2 ms; a watchdog thread checks it every 2 ms, and while the stamp is
// over 10 ms old it samples the main thread's state and current system call from /proc
// (R: running JavaScript or native code; S or D: waiting in the call named). At exit it
// writes $PROBE_DIR/stalls-<pid>.json: { stalls: [[wall ms at the stall's start, its length
// in ms, {"R": samples, "S futex": samples, …}], …] for every stall over 10 ms, sqlite:
// [[wall ms, ms, the statement's first 60 characters], …] for every better-sqlite3 call
// (statement or pragma) over 2 ms }.
const { Worker, isMainThread, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const STALL_MS = 10;

if (isMainThread) {
  const beat = new Float64Array(new SharedArrayBuffer(8));
  const stamp = () => (beat[0] = performance.timeOrigin + performance.now());
  stamp();
  setInterval(stamp, 2).unref();
  const stalls = [];
  const sqlite = [];
  timeSqlite(sqlite);
  const watchdog = new Worker(__filename, { workerData: { stallProbe: true, buffer: beat.buffer, tid: process.pid } });
  watchdog.on('message', (stall) => stalls.push(stall));
  watchdog.unref();
  process.on('exit', () => {
    const dir = process.env.PROBE_DIR ?? os.tmpdir();
    fs.writeFileSync(path.join(dir, `stalls-${process.pid}.json`), JSON.stringify({ stalls, sqlite }));
  });
}

/** Notes every better-sqlite3 statement run over 2 ms into `into` (a pragma runs one too). */
function timeSqlite(into) {
  const Database = require('better-sqlite3');
  const timed = (fn, text) =>
    function (...args) {
      const start = performance.now();
      try {
        return fn.apply(this, args);
      } finally {
        const ms = performance.now() - start;
        if (ms > 2) into.push([Math.round(performance.timeOrigin + start), Math.round(ms * 10) / 10, text(this, args).slice(0, 60)]);
      }
    };
  const patched = new WeakSet();
  const prepare = Database.prototype.prepare;
  Database.prototype.prepare = function (...args) {
    const statement = prepare.apply(this, args);
    const proto = Object.getPrototypeOf(statement);
    if (!patched.has(proto)) {
      patched.add(proto);
      for (const name of ['run', 'get', 'all']) proto[name] = timed(proto[name], (s) => s.source);
    }
    return statement;
  };
}

// Other threads (SQLite's checkpoints) load this too: only the watchdog runs here.
if (!isMainThread && workerData?.stallProbe) {
  const { parentPort } = require('node:worker_threads');
  const beat = new Float64Array(workerData.buffer);
  // x86-64 numbers of the calls a stalled serving thread may wait in.
  const NAMES = { 0: 'read', 1: 'write', 7: 'poll', 17: 'pread64', 18: 'pwrite64', 35: 'nanosleep', 74: 'fsync', 75: 'fdatasync', 77: 'ftruncate', 202: 'futex', 230: 'clock_nanosleep', 232: 'epoll_wait', 281: 'epoll_pwait', 9: 'mmap', 11: 'munmap', 10: 'mprotect', 28: 'madvise' };
  const read = (name) => {
    try {
      return fs.readFileSync(`/proc/self/task/${workerData.tid}/${name}`, 'utf8');
    } catch {
      return '';
    }
  };
  let stall;
  const check = () => {
    const now = performance.timeOrigin + performance.now();
    const age = now - beat[0];
    if (age > STALL_MS) {
      stall ??= { start: beat[0], samples: {} };
      const state = read('stat').split(') ')[1]?.[0] ?? '?';
      const call = read('syscall').split(' ')[0];
      const key = state === 'R' ? 'R' : `${state} ${NAMES[call] ?? call}`;
      stall.samples[key] = (stall.samples[key] ?? 0) + 1;
    } else if (stall) {
      parentPort.postMessage([Math.round(stall.start), Math.round(beat[0] - stall.start), stall.samples]);
      stall = undefined;
    }
  };
  setInterval(check, 2);
}
