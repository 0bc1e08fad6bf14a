/**
 * The disk's own tail, beside a measurement: a worker thread writes 8 KiB to a file in
 * the temporary directory (where the bench's databases live) and waits for fdatasync,
 * every 10 ms, and counts the calls that took over STALL_MS. PostgreSQL waits for such a
 * call at every commit (durable, as in production), so a stall of the disk holds every
 * write under way, whichever server is measured then (bench/README.md, "Latency at a
 * fixed rate"). About 100 small synced writes per second: next to nothing for the disk.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

export const STALL_MS = 50;

const PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
const fs = require('node:fs');
const fd = fs.openSync(workerData.file, 'w');
const block = Buffer.alloc(8192, 120);
let stopping = false;
let probes = 0;
const stalls = [];
/** Every call's time, ms: about 100 a second. */
const times = [];
parentPort.once('message', () => (stopping = true));
const probe = () => {
  if (stopping) {
    fs.closeSync(fd);
    times.sort((a, b) => a - b);
    const at = (q) => Math.round((times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0) * 10) / 10;
    parentPort.postMessage({ probes, stalls, p50: at(0.5), p99: at(0.99) });
    return;
  }
  const start = performance.now();
  fs.writeSync(fd, block, 0, block.length, (probes % 128) * block.length);
  fs.fdatasyncSync(fd);
  const took = performance.now() - start;
  probes++;
  times.push(took);
  if (took > workerData.stallMs) stalls.push(Math.round(took));
  setTimeout(probe, 10);
};
probe();
`;

/** Starts probing; `stop()` resolves with { probes, stalls: [ms of each call over STALL_MS], p50, p99 (ms of a call) }. */
export function startDiskProbe() {
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-disk-probe-'));
  const worker = new Worker(PROBE, { eval: true, workerData: { file: join(dir, 'probe.dat'), stallMs: STALL_MS } });
  return {
    stop: () =>
      new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.postMessage('stop');
      }).finally(() => {
        void worker.terminate();
        rmSync(dir, { recursive: true, force: true });
      }),
  };
}

/**
 * "fdatasync p50 0.9, p99 21 ms, 2 over 50 ms (longest 162 ms)": a commit on PostgreSQL
 * waits at least one such call, and a busy one the call under way before its own.
 */
export function describeStalls({ stalls, p50, p99 }) {
  const spread = p99 === undefined ? 'fdatasync' : `fdatasync p50 ${p50}, p99 ${p99} ms,`;
  if (stalls.length === 0) return `${spread} none over ${STALL_MS} ms`;
  return `${spread} ${stalls.length} over ${STALL_MS} ms (longest ${Math.max(...stalls)} ms)`;
}
