/**
 * What tracing costs (README, "Observability"; `npm run build && node bench/tracing/run.mjs`).
 *
 * 1. In-process: the call sites with tracing off (`withSpan`, `traceExecute`) against a
 *    direct call, in ns per call; an executed operation passes two of them.
 * 2. Under load (autocannon, 50 connections), on queries that execute every time
 *    (RESPONSE_CACHE_MB=0, so every request runs prepare, execute and its SQL): the
 *    service with tracing off, and with tracing on exporting every span over OTLP/HTTP
 *    to a sink in its own process; with `--base=<checkout>` (a built checkout without
 *    this instrumentation, e.g. the commit before it) that one too; with `--logs` also
 *    tracing off at LOG_LEVEL=info (the bench's services log at warn). Variants alternate
 *    within each round (BENCH_ROUNDS, default 3); the table shows medians of req/s,
 *    p99 and the service's CPU per request, the steadiest measure on a shared VM.
 */
import { join, resolve } from 'node:path';
import { installCleanup, forkTracked, stopChild, waitForMessage } from '../lib/children.mjs';
import { waitForQuiet } from '../lib/cpu.mjs';
import { runLoad } from '../lib/load.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { ROOT, freePort, postGraphQL, serviceEnv } from '../lib/service.mjs';
import { ROUNDS } from '../lib/scenario.mjs';
import { measureCallSites } from './micro.mjs';

installCleanup();
const args = process.argv.slice(2);
const base = args.find((a) => a.startsWith('--base='))?.slice('--base='.length);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function startSink() {
  const child = forkTracked(new URL('./sink.mjs', import.meta.url).pathname);
  const { port } = await waitForMessage(child, (m) => m?.type === 'listening');
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stats: async () => {
      child.send({ type: 'stats' });
      return waitForMessage(child, (m) => m?.type === 'stats');
    },
    stop: () => stopChild(child),
  };
}

/**
 * Like startService, but from any checkout's dist/main.js (the baseline's too), with the
 * service's stdout discarded: at LOG_LEVEL=info it writes a line per request.
 */
async function startBuilt({ root, dbFile, env }) {
  const port = await freePort();
  const child = forkTracked(join(root, 'dist/main.js'), [], { cwd: root, env: serviceEnv({ dbFile, port, env }), stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const url = `http://127.0.0.1:${port}`;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    if (child.exitCode !== null) throw new Error(`the service in ${root} exited during start-up`);
    const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
    if (ok) return { url, graphqlUrl: `${url}/graphql`, child, stop: () => stopChild(child, 15_000) };
  }
  throw new Error(`the service in ${root} did not start`);
}

async function main() {
  console.log('## Tracing off: the call sites in-process\n');
  const micro = measureCallSites();
  const perOp = micro.withSpanNs + micro.traceExecuteNs - 2 * micro.directNs;
  console.log(`direct call ${micro.directNs.toFixed(2)} ns; withSpan ${micro.withSpanNs.toFixed(2)} ns; traceExecute ${micro.traceExecuteNs.toFixed(2)} ns`);
  console.log(`→ ${perOp.toFixed(1)} ns added per executed operation (two call sites)`);
  console.log(`(always on, for scale: the metrics of one request, ${micro.metricsPerRequestNs.toFixed(0)} ns)\n`);

  const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });
  const sink = await startSink();
  const env = { RESPONSE_CACHE_MB: '0' };
  const start = (root, extra = {}) => () => startBuilt({ root, dbFile: db.dbFile, env: { ...env, ...extra } });
  const variants = [
    { name: 'tracing off', start: start(ROOT) },
    { name: 'tracing on (OTLP/HTTP to a sink)', start: start(ROOT, { OTEL_EXPORTER_OTLP_ENDPOINT: sink.endpoint }) },
  ];
  if (args.includes('--logs')) variants.push({ name: 'tracing off, LOG_LEVEL=info (a line per request)', start: start(ROOT, { LOG_LEVEL: 'info' }) });
  if (base) variants.unshift({ name: `baseline (${base})`, start: start(resolve(base)) });

  const scenarios = [
    { name: 'user(id) { id name }, executed', query: `{ user(id: "${db.userIds[0]}") { id name } }` },
    { name: 'users(10) { posts(5) { title } }, executed', query: '{ users(limit: 10) { id name posts(limit: 5) { id title } } }' },
  ];

  const rows = [];
  try {
    for (const scenario of scenarios) {
      const body = JSON.stringify({ query: scenario.query });
      const results = new Map(variants.map((v) => [v.name, []]));
      for (let round = 0; round < ROUNDS; round++) {
        // Rotate the order so no variant always runs first (the VM's speed drifts).
        const order = variants.map((_, i) => variants[(i + round) % variants.length]);
        for (const variant of order) {
          const service = await variant.start();
          try {
            const check = await postGraphQL(service.graphqlUrl, body);
            if (check.status !== 200 || check.bytes.toString().includes('"errors"')) throw new Error(`${variant.name}: ${check.bytes}`);
            await waitForQuiet({ log: (m) => console.error(`[bench] ${m}`) });
            results.get(variant.name).push(await runLoad({ url: service.graphqlUrl, body, expectBody: check.bytes.toString('utf8'), serverPid: service.child.pid }));
          } finally {
            await service.stop();
          }
        }
      }
      for (const variant of variants) {
        const runs = results.get(variant.name);
        rows.push({
          scenario: scenario.name,
          variant: variant.name,
          rps: median(runs.map((r) => r.rps)),
          p99: median(runs.map((r) => r.p99)),
          cpu: median(runs.map((r) => r.serverCpuUsPerReq)),
          all: runs.map((r) => Math.round(r.rps)).join(' / '),
          bad: runs.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts + (r.warmup?.mismatches ?? 0), 0),
        });
      }
    }
    const stats = await sink.stats();
    console.log(`## Under load (${ROUNDS} rounds, medians; RESPONSE_CACHE_MB=0)\n`);
    console.log('| scenario | variant | req/s | p99 ms | service CPU µs/req | req/s per round | failures |');
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    for (const r of rows) {
      console.log(`| ${r.scenario} | ${r.variant} | ${Math.round(r.rps)} | ${r.p99} | ${Math.round(r.cpu)} | ${r.all} | ${r.bad} |`);
    }
    console.log(`\nThe sink received ${stats.exports} exports, ${(stats.bytes / 1e6).toFixed(1)} MB of spans.`);
  } finally {
    await sink.stop();
    db.remove();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
