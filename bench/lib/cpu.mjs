/** CPU time of another process (user + system, all threads) from /proc; undefined off Linux. */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

let ticksPerSecond;
function clockTicks() {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/**
 * A process's or thread's name and CPU ticks so far (user + system) from its `stat` file
 * (`/proc/<pid>/stat`, `/proc/self/task/<tid>/stat`); throws when it is gone.
 */
export function procStat(path) {
  const stat = readFileSync(path, 'utf8');
  // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ticks: Number(fields[11]) + Number(fields[12]) };
}

/** Milliseconds of CPU the process has used so far, or undefined when unknown. */
export function cpuMsOf(pid) {
  try {
    return (procStat(`/proc/${pid}/stat`).ticks * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}

/** The whole machine's clock ticks so far (all cores): busy (steal included) and idle (iowait included). */
export function machineTicks() {
  const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return { busy: user + nice + system + irq + softirq + (steal || 0), idle: idle + iowait };
}

/** Milliseconds of CPU the whole machine has been busy (all cores, steal included), or undefined. */
export function machineBusyMs() {
  try {
    return (machineTicks().busy * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}

/** CPU milliseconds so far of every process (kernel threads included), by pid with its name. */
function everyProcess() {
  const seen = new Map();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const { name, ticks } = procStat(`/proc/${pid}/stat`);
      seen.set(pid, { name, ms: (ticks * 1000) / clockTicks() });
    } catch {
      // Gone meanwhile.
    }
  }
  return seen;
}

/** The processes busiest between two `everyProcess()` snapshots a second apart: "postgres 0.31, kworker/u8:5 0.10". */
function busiest(before, after, count = 3) {
  const busy = [];
  for (const [pid, { name, ms }] of after) {
    const cores = (ms - (before.get(pid)?.ms ?? ms)) / 1000;
    if (cores >= 0.02) busy.push([`${name} ${cores.toFixed(2)}`, cores]);
  }
  return busy.sort((a, b) => b[1] - a[1]).slice(0, count).map(([label]) => label).join(', ') || 'no single process';
}

/**
 * Waits (up to `maxWaitMs`, BENCH_QUIET_WAIT seconds, default 60) until the machine's
 * busy time over one second is below `threshold` cores, so other people's test runs do
 * not skew a measurement. Call it while nothing of the bench is loaded. Returns the last
 * measured load (cores), or undefined when /proc is not available.
 */
export async function waitForQuiet({
  threshold = 0.25,
  maxWaitMs = Number(process.env.BENCH_QUIET_WAIT ?? 60) * 1000,
  log = () => {},
} = {}) {
  const deadline = Date.now() + maxWaitMs;
  let warned = false;
  for (;;) {
    const before = machineBusyMs();
    if (before === undefined) return undefined;
    const processes = everyProcess();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const load = (machineBusyMs() - before) / 1000;
    // Named, so that a run can tell PostgreSQL's autovacuum or the kernel's writeback from someone else's tests.
    const who = () => busiest(processes, everyProcess());
    if (load < threshold || Date.now() >= deadline) {
      if (load >= threshold) log(`machine still busy (${load.toFixed(2)} cores used by others: ${who()}); measuring anyway`);
      return load;
    }
    if (!warned) log(`machine busy (${load.toFixed(2)} cores used by others: ${who()}); waiting up to ${Math.round(maxWaitMs / 1000)} s`);
    warned = true;
  }
}
