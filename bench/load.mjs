/**
 * The load generator, in its own process so it never shares an event loop with the
 * server under test. Configured over IPC:
 *   parent → { url, method, headers, body, connections, pipelining, duration, warmup, expectBody }
 *   child  → { type: 'measuring' } then { type: 'result', result } | { type: 'error', message }
 * A short warm-up run (checking every body against `expectBody`, when given) precedes
 * the measured run, which does no checking so it costs the generator nothing extra.
 * With `rate` the measured run sends that many requests per second on schedule, open
 * loop (bench/mixed/open-loop.mjs), instead of closed loop on `connections`.
 */
import autocannon from 'autocannon';
import { withoutCost } from './lib/cost-report.mjs';
import { openLoop } from './mixed/open-loop.mjs';

function summarise(r) {
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    mean: r.latency.average,
    max: r.latency.max,
    bytesPerSec: r.throughput.average,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    mismatches: r.mismatches ?? 0,
    duration: r.duration,
  };
}

// The parent ends this process (SIGTERM) once it has the answer, or by disconnecting.
process.once('disconnect', () => process.exit(0));

process.once('message', async (opts) => {
  try {
    const base = {
      url: opts.url,
      method: opts.method ?? 'POST',
      headers: opts.headers,
      body: opts.body,
      connections: opts.connections ?? 50,
      pipelining: opts.pipelining ?? 1,
      // A fixed request rate (open loop): CPU per request then compares code, not load dynamics.
      ...(opts.overallRate ? { overallRate: opts.overallRate } : {}),
    };
    let warmup = null;
    if (opts.warmup > 0) {
      // Compared without the cost report, which changes from one request to the next.
      const expected = opts.expectBody === undefined ? undefined : withoutCost(opts.expectBody);
      const expect = expected === undefined ? {} : { verifyBody: (body) => withoutCost(body) === expected };
      warmup = summarise(await autocannon({ ...base, ...expect, duration: opts.warmup }));
    }
    process.send({ type: 'measuring' });
    const started = process.cpuUsage();
    const duration = opts.duration ?? 10;
    const result = opts.rate
      ? await openLoop({ url: opts.url, rate: opts.rate, duration, next: () => ({ shape: 'body', body: opts.body, headers: opts.headers }), onResponse: () => {} })
      : summarise(await autocannon({ ...base, duration }));
    const used = process.cpuUsage(started);
    // The generator's own CPU share: near 100 % means it, not the server, set the pace.
    const generatorCpu = (used.user + used.system) / 1000 / (result.duration * 1000);
    process.send({ type: 'result', result: { ...result, generatorCpu, warmup } });
  } catch (error) {
    process.send({ type: 'error', message: String(error?.stack ?? error) });
  }
});
