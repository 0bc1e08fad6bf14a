/**
 * The idle-connection bench: what 10,000 idle keep-alive HTTP connections and 10,000
 * idle WebSocket subscribers cost one service process, in memory per connection (RSS and
 * V8 heap after a full GC) and in the latency of one active client beside them.
 *
 *   npm run build && node bench/idle/run.mjs [--count=10000] [--seconds=8]
 *
 * Processes: the built service (SQLite, production settings, preloaded with
 * bench/fanout/memory-probe.mjs, which reports memory over IPC after a full GC); the
 * crowd (crowd.mjs), which opens and holds the idle connections; and this one, which
 * runs the active client: one keep-alive connection sending `{ user(id) { id name } }`
 * one request after another, timed with a µs clock. Phases: alone, with the HTTP crowd,
 * alone again, with the WebSocket crowd, and with both (when the open-file limit allows).
 * Each phase finishes well within the service's 72 s keep-alive timeout, so the HTTP
 * crowd stays open without sending anything. Results: bench/results/idle.md.
 *
 * Needs an open-file limit above the crowd: 10,000 sockets per crowd in the crowd and
 * in the service (20,000 with both). The bench raises its own soft limit up to the hard
 * limit (as root, the hard limit too) by re-running itself under `ulimit -n`; with a
 * lower limit it says what to run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { forkTracked, stopChild, waitForMessage } from '../lib/children.mjs';
import { quantile } from '../lib/rounds.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { ROOT, startService } from '../lib/service.mjs';

const args = Object.fromEntries(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=')));
const COUNT = Number(args.count ?? 10_000);
const SECONDS = Number(args.seconds ?? 8);
const WANTED_FILES = 2 * COUNT + 4096;
const PROBE = pathToFileURL(fileURLToPath(new URL('../fanout/memory-probe.mjs', import.meta.url))).href;
const CROWD = fileURLToPath(new URL('./crowd.mjs', import.meta.url));
const RESULTS = fileURLToPath(new URL('../results/idle.md', import.meta.url));

const openFileLimit = () => Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());

/** Re-runs this script under a higher open-file limit when it can; returns true if it did. */
function raiseLimit() {
  if (openFileLimit() >= WANTED_FILES || process.env.INKWELL_IDLE_BENCH_RAISED) return false;
  const script = `ulimit -Hn ${WANTED_FILES} 2>/dev/null; ulimit -n ${WANTED_FILES} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`;
  const result = spawnSync('sh', ['-c', script, process.execPath, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, INKWELL_IDLE_BENCH_RAISED: '1' },
  });
  process.exit(result.status ?? 1);
}

async function memory(child) {
  child.send({ cmd: 'memory', gc: true });
  const m = await waitForMessage(child, (message) => message.cmd === 'memory', 30_000);
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external + (m.arrayBuffers ?? 0) };
}

/** One active client: sequential requests on one keep-alive connection for `seconds`. */
async function activeClient(url, userId, seconds) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ query: `{ user(id: "${userId}") { id name } }` });
  const one = () =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      const req = request(`${url}/graphql`, { agent, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.once('end', () => (res.statusCode === 200 ? resolve(Number(process.hrtime.bigint() - started) / 1000) : reject(new Error(`status ${res.statusCode}`))));
      });
      req.once('error', reject);
      req.end(body);
    });
  for (let i = 0; i < 200; i++) await one(); // warm the connection and the caches
  const latencies = [];
  const end = Date.now() + seconds * 1000;
  while (Date.now() < end) latencies.push(await one());
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q) => quantile(latencies, q);
  return { requests: latencies.length, p50: at(0.5), p99: at(0.99), max: latencies.at(-1) };
}

async function openCrowd(kind, service, postIds) {
  const crowd = forkTracked(CROWD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  await waitForMessage(crowd, (m) => m.cmd === 'ready');
  const url = kind === 'http' ? service.url : `${service.url.replace(/^http/, 'ws')}/graphql`;
  crowd.send({ cmd: 'open', kind, url, count: COUNT, postIds: postIds.slice(0, 100) });
  const opened = await waitForMessage(crowd, (m) => m.cmd === 'opened' || m.cmd === 'error', 300_000);
  if (opened.cmd === 'error') throw new Error(opened.message);
  if (opened.open !== COUNT) throw new Error(`only ${opened.open} of ${COUNT} ${kind} connections opened`);
  return { crowd, openMs: opened.ms };
}

async function stillOpen(crowd) {
  crowd.send({ cmd: 'status' });
  const status = await waitForMessage(crowd, (m) => m.cmd === 'status');
  return status.http + status.ws;
}

async function closeCrowd(crowd) {
  crowd.send({ cmd: 'close' });
  await stopChild(crowd, 10_000);
  await new Promise((r) => setTimeout(r, 2_000)); // the service notices the closes
}

const kb = (bytes) => (bytes / 1024).toFixed(1);
const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const ms = (us) => (us / 1000).toFixed(2);

async function main() {
  if (raiseLimit()) return;
  const limit = openFileLimit();
  if (limit < COUNT + 1024) {
    throw new Error(`open-file limit ${limit} is too low for ${COUNT} connections: run \`ulimit -n ${WANTED_FILES}\` (as root, or raise the hard limit) first`);
  }
  const both = limit >= 2 * COUNT + 1024;
  console.log(`idle bench: ${COUNT} connections per crowd, ${SECONDS} s per latency run, open-file limit ${limit}`);

  const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });
  // The crowd may pass WS_MAX_CONNECTIONS (--count), or a crowd may open while the last one is still closing.
  const env = { WS_MAX_CONNECTIONS: String(2 * COUNT) };
  const service = await startService({ dbFile: db.dbFile, env, nodeArgs: ['--expose-gc', '--import', PROBE] });
  const rows = [];
  // `added`: connections the phase opens; memory per connection is measured against the
  // moment just before they opened (RSS does not fall back fully after a crowd leaves).
  const phase = async (name, connections, added, run) => {
    const before = await memory(service.child);
    const state = await run();
    const mem = await memory(service.child);
    const latency = await activeClient(service.url, db.userIds[0], SECONDS);
    const open = state?.crowds ? (await Promise.all(state.crowds.map(stillOpen))).reduce((a, b) => a + b, 0) : 0;
    rows.push({ name, connections, added, before, mem, latency, open, openMs: state?.openMs });
    console.log(`${name}: rss ${mb(mem.rss)} MB, heap ${mb(mem.heapUsed)} MB, p50 ${ms(latency.p50)} ms, p99 ${ms(latency.p99)} ms (${latency.requests} requests), open ${open}`);
    return state;
  };
  try {
    const n = COUNT.toLocaleString('en');
    await phase('alone', 0, 0, async () => undefined);
    const http = await phase(`${n} idle HTTP keep-alive`, COUNT, COUNT, async () => {
      const { crowd, openMs } = await openCrowd('http', service, db.postIds);
      return { crowds: [crowd], openMs };
    });
    await closeCrowd(http.crowds[0]);
    await phase('alone again', 0, 0, async () => undefined);
    const ws = await phase(`${n} idle WebSocket subscribers`, COUNT, COUNT, async () => {
      const { crowd, openMs } = await openCrowd('ws', service, db.postIds);
      return { crowds: [crowd], openMs };
    });
    if (both) {
      const more = await phase(`both (${n} HTTP added to the WebSockets)`, 2 * COUNT, COUNT, async () => {
        const { crowd, openMs } = await openCrowd('http', service, db.postIds);
        return { crowds: [ws.crowds[0], crowd], openMs };
      });
      await closeCrowd(more.crowds[1]);
    }
    await closeCrowd(ws.crowds[0]);
    report(rows, limit);
  } finally {
    await service.stop();
    db.remove();
  }
}

function report(rows, limit) {
  const lines = [
    `# Idle connections (${new Date().toISOString().slice(0, 10)})`,
    '',
    `\`node bench/idle/run.mjs --count=${COUNT} --seconds=${SECONDS}\`: one service process (SQLite, production settings), ` +
      `memory after a full GC, and one active client's sequential \`{ user(id) { id name } }\` requests on a keep-alive connection ` +
      `(${SECONDS} s per phase). Per connection: the growth while the phase's connections opened, divided by their number. Open-file limit ${limit}.`,
    '',
    '| phase | connections | RSS MB | heap MB | RSS KB / conn | heap KB / conn | active p50 ms | active p99 ms | requests | still open |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of rows) {
    const per = (field) => (row.added ? kb((row.mem[field] - row.before[field]) / row.added) : '–');
    lines.push(
      `| ${row.name} | ${row.connections} | ${mb(row.mem.rss)} | ${mb(row.mem.heapUsed)} | ${per('rss')} | ${per('heapUsed')} | ${ms(row.latency.p50)} | ${ms(row.latency.p99)} | ${row.latency.requests} | ${row.connections ? row.open : '–'} |`,
    );
  }
  writeFileSync(RESULTS, `${lines.join('\n')}\n`);
  console.log(`\n${lines.join('\n')}\n\nwritten to ${RESULTS.replace(ROOT, '')}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
