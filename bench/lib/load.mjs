/** Runs autocannon (bench/load.mjs) in its own process against one URL. */
import { fileURLToPath } from 'node:url';
import { forkTracked, stopChild, waitForMessage } from './children.mjs';
import { cpuMsOf, machineBusyMs } from './cpu.mjs';
import { REQUEST_HEADERS } from './service.mjs';

const SCRIPT = fileURLToPath(new URL('../load.mjs', import.meta.url));

/** Defaults, overridable with BENCH_CONNECTIONS / BENCH_DURATION / BENCH_WARMUP (seconds). */
export const LOAD_DEFAULTS = {
  connections: Number(process.env.BENCH_CONNECTIONS ?? 50),
  pipelining: 1,
  duration: Number(process.env.BENCH_DURATION ?? 8),
  warmup: Number(process.env.BENCH_WARMUP ?? 2),
};

/**
 * Resolves with { rps, p50, p90, p99, mean, max, non2xx, errors, timeouts, mismatches,
 * generatorCpu, serverCpu?, serverCpuUsPerReq?, warmup }.
 * `expectBody` (a string) is checked on every warm-up response (counted in warmup.mismatches).
 * `serverPid`: the server's CPU over the measured run is reported (share of one core, and µs per request).
 * `script`: another generator speaking the same IPC protocol (e.g. bench/mixed/traffic-worker.mjs).
 */
export async function runLoad({ url, body, headers = REQUEST_HEADERS, method = 'POST', expectBody, serverPid, script = SCRIPT, ...rest }) {
  const opts = { ...LOAD_DEFAULTS, ...rest, url, body, headers, method, expectBody };
  const child = forkTracked(script);
  try {
    let cpuAtStart;
    let busyAtStart;
    child.on('message', (m) => {
      if (m?.type !== 'measuring') return;
      busyAtStart = machineBusyMs();
      if (serverPid) cpuAtStart = cpuMsOf(serverPid);
    });
    child.send(opts);
    const timeoutMs = (opts.duration + opts.warmup + 60) * 1000;
    const message = await waitForMessage(child, (m) => m?.type === 'result' || m?.type === 'error', timeoutMs);
    if (message.type === 'error') throw new Error(`load generator failed: ${message.message}`);
    const result = message.result;
    const cpuAtEnd = serverPid ? cpuMsOf(serverPid) : undefined;
    const busyAtEnd = machineBusyMs();
    const wallMs = result.duration * 1000;
    if (cpuAtStart !== undefined && cpuAtEnd !== undefined) {
      const cpuMs = cpuAtEnd - cpuAtStart;
      result.serverCpu = cpuMs / wallMs;
      result.serverCpuUsPerReq = result.total > 0 ? (cpuMs * 1000) / result.total : undefined;
    }
    if (busyAtStart !== undefined && busyAtEnd !== undefined) {
      // Everything else on the machine (other people's tests…), in cores: noise indicator.
      result.otherCpu = Math.max(0, (busyAtEnd - busyAtStart) / wallMs - (result.serverCpu ?? 0) - result.generatorCpu);
    }
    return result;
  } finally {
    await stopChild(child, 2000);
  }
}
