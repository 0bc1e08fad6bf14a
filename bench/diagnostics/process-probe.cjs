// A diagnostic loaded into a service under test (not part of any measurement):
//   node bench/mixed/run.mjs --env=NODE_OPTIONS=--require=$PWD/bench/diagnostics/process-probe.cjs --env=PROBE_DIR=DIR
// Every 100 ms it notes the process's CPU per thread, the event loop's largest delay, the
// SQLite WAL's size, the heap used and the machine's busy and idle CPU; and every GC pause
// over 5 ms with its kind (perf_hooks: 1 minor, 4 major, 8 incremental, 16 weak callbacks).
// At exit it writes them to $PROBE_DIR/probe-<pid>.json (the system's temporary directory
// by default): { file, gcs: [[wall ms, ms, kind]], ticks: [[wall ms, loop delay ms,
// {tid: [name, cpu ticks]}, [busy, idle] machine ticks, WAL bytes, heap MB]] }.
// Its cost, reading /proc every 100 ms, is well under 1 % of a core.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { PerformanceObserver, monitorEventLoopDelay } = require('node:perf_hooks');
// An ES module, loaded with require (Node ≥ 20.19): the bench's own reading of /proc.
const { machineTicks, procStat } = require('../lib/cpu.mjs');

const url = process.env.DATABASE_URL ?? '';
const file = url.startsWith('file:') ? url.slice('file:'.length) : null;
const gcs = [];
const ticks = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.duration > 5) gcs.push([Math.round(performance.timeOrigin + e.startTime), Math.round(e.duration), e.detail?.kind]);
}).observe({ entryTypes: ['gc'] });
const delay = monitorEventLoopDelay({ resolution: 10 });
delay.enable();

/** Each thread's name and CPU ticks (utime + stime) so far. */
function threads() {
  const out = {};
  for (const tid of fs.readdirSync('/proc/self/task')) {
    try {
      const { name, ticks } = procStat(`/proc/self/task/${tid}/stat`);
      out[tid] = [name, ticks];
    } catch {
      // Ended meanwhile.
    }
  }
  return out;
}

/** The machine's busy and idle ticks so far (bench/lib/cpu.mjs). */
function machine() {
  const { busy, idle } = machineTicks();
  return [busy, idle];
}

setInterval(() => {
  let wal = -1;
  try {
    if (file) wal = fs.statSync(`${file}-wal`).size;
  } catch {
    // No WAL yet.
  }
  ticks.push([Date.now(), Math.round(delay.max / 1e6), threads(), machine(), wal, Math.round(process.memoryUsage().heapUsed / 1e6)]);
  delay.reset();
}, 100).unref();

process.on('exit', () => {
  const dir = process.env.PROBE_DIR ?? os.tmpdir();
  fs.mkdirSync(dir, { recursive: true }); // a missing PROBE_DIR once cost a whole run's files
  fs.writeFileSync(path.join(dir, `probe-${process.pid}.json`), JSON.stringify({ file, gcs, ticks }));
});
