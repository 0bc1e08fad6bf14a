/**
 * Fan-out bench (issue 4): 5,000 WebSocket subscribers of one post on one instance, then
 * 100 reactions. Reports publish→receipt latency (p50, p99), deliveries per second and
 * the server's RSS per idle subscribed connection. Targets: p99 ≤ 250 ms, ≤ 16 KB per
 * connection.
 *
 *   npm run build && node bench/fanout/run.mjs          # alone
 *   npm run bench                                       # with the others (bench/run.mjs)
 *   BENCH_FANOUT_SUBSCRIBERS=5000 BENCH_FANOUT_REACTIONS=100 BENCH_FANOUT_INTERVAL_MS=0
 *   BENCH_FANOUT_PROFILE_DIR=/tmp/prof   # the service writes a .cpuprofile there on exit
 *
 * Three processes: the service (`dist/main.js`, preloaded with memory-probe.mjs, which
 * reports memory over IPC after a full GC), the load generator (loadgen.mjs) and this
 * orchestrator. On a fresh SQLite database with one published post, the steps are:
 * warm up (one subscriber, one event), measure RSS, connect every subscriber, wait
 * until one reaction reaches all of them (so every subscription is live), measure RSS
 * again — (after − before) ÷ subscribers is the RSS per idle subscribed connection —
 * then send the reactions one after another (each `addReaction` over HTTP with a real
 * access token waits for its response; BENCH_FANOUT_INTERVAL_MS adds a pause) and time
 * every delivery.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { forkTracked, installCleanup, stopChild, waitForMessage } from '../lib/children.mjs';
import { cpuMsOf, waitForQuiet } from '../lib/cpu.mjs';
import { insertUsersAndPosts, makeTempDir, migrate } from '../lib/seed.mjs';
import { ROOT, startService } from '../lib/service.mjs';
import { formatTable } from '../lib/table.mjs';
import { SUBSCRIPTION, addReaction, signUp } from './api.mjs';

const PROBE = pathToFileURL(fileURLToPath(new URL('./memory-probe.mjs', import.meta.url))).href;
const LOADGEN = fileURLToPath(new URL('./loadgen.mjs', import.meta.url));
const TARGETS = { p99Ms: 250, bytesPerConnection: 16 * 1024 };

/** `ctx` as bench/run.mjs passes it ({ only, … }); returns table rows (bench/lib/table.mjs). */
export async function runFanout(ctx = {}) {
  if (ctx.only?.length && !ctx.only.some((name) => name.toLowerCase() === 'fanout')) return [];
  const subscribers = Number(process.env.BENCH_FANOUT_SUBSCRIBERS ?? 5_000);
  const reactions = Number(process.env.BENCH_FANOUT_REACTIONS ?? 100);
  const intervalMs = Number(process.env.BENCH_FANOUT_INTERVAL_MS ?? 0);
  checkFileLimit(subscribers);

  const temp = makeTempDir('inkwell-fanout-');
  let service;
  let loadgen;
  try {
    const dbFile = join(temp.dir, 'fanout.db');
    await migrate(dbFile);
    const [postId] = insertUsersAndPosts(dbFile, { users: 1, postsPerUser: 1 }).postIds;
    const profileDir = process.env.BENCH_FANOUT_PROFILE_DIR;
    const nodeArgs = ['--expose-gc', '--import', PROBE, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
    service = await startService({ dbFile, nodeArgs });
    const wsUrl = `${service.url.replace(/^http/, 'ws')}/graphql`;
    const token = await signUp(service.url);
    const api = { graphqlUrl: service.graphqlUrl, token, postId };

    await warmUp(wsUrl, api);
    await waitForQuiet({ log });
    const before = await memory(service.child);

    loadgen = forkTracked(LOADGEN, [], { cwd: ROOT });
    await waitForMessage(loadgen, (m) => m.cmd === 'ready');
    log(`opening ${subscribers} subscriptions`);
    loadgen.send({ cmd: 'connect', url: wsUrl, postId, count: subscribers });
    const connected = check(await waitForMessage(loadgen, (m) => m.cmd === 'connect', 300_000));
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    // A barrier: one event that every subscriber receives proves every subscription is live.
    loadgen.send({ cmd: 'react', ...api, reactions: 1, prefix: 'barrier', timeoutMs: 30_000 });
    const barrier = check(await waitForMessage(loadgen, (m) => m.cmd === 'react', 60_000));
    if (barrier.received !== subscribers) throw new Error(`only ${barrier.received} of ${subscribers} subscribers got the barrier event`);
    const after = await memory(service.child);
    const perConnection = (after.rss - before.rss) / subscribers;
    const heapPerConnection = (after.heapUsed - before.heapUsed) / subscribers;
    log(`${connected.connected} connected in ${connected.ms} ms; ${kb(perConnection)} KB RSS, ${kb(heapPerConnection)} KB heap per connection`);

    log(`${reactions} reactions`);
    const cpuBefore = { service: cpuMsOf(service.child.pid), loadgen: cpuMsOf(loadgen.pid) };
    loadgen.send({ cmd: 'react', ...api, reactions, intervalMs });
    const result = check(await waitForMessage(loadgen, (m) => m.cmd === 'react', 300_000));
    const cpu = {
      service: (cpuMsOf(service.child.pid) - cpuBefore.service) / reactions,
      loadgen: (cpuMsOf(loadgen.pid) - cpuBefore.loadgen) / reactions,
    };
    log(`${result.received}/${result.expected} delivered; p50 ${result.p50} ms, p99 ${result.p99} ms, ${Math.round(result.messagesPerSecond)} msg/s`);
    log(`CPU per reaction: service ${cpu.service.toFixed(1)} ms, load generator ${cpu.loadgen.toFixed(1)} ms`);

    const pass = result.received === result.expected && result.p99 <= TARGETS.p99Ms && perConnection <= TARGETS.bytesPerConnection;
    return [
      {
        scenario: `fanout: ${subscribers.toLocaleString('en-US')} WS subscribers × ${reactions} reactions`,
        service: { rps: result.messagesPerSecond, p50: result.p50, p99: result.p99 },
        ceiling: null,
        pass,
        notes:
          `req/s column = deliveries/s; p50/p99 = publish→receipt; ${kb(perConnection)} KB RSS per idle subscribed connection ` +
          `(heap ${kb(heapPerConnection)} KB); targets p99 ≤ ${TARGETS.p99Ms} ms, ≤ ${TARGETS.bytesPerConnection / 1024} KB/conn; ` +
          `delivered ${result.received.toLocaleString('en-US')}/${result.expected.toLocaleString('en-US')}, max ${result.max} ms, ` +
          `reactions sent in ${result.publishSeconds.toFixed(1)} s; CPU per reaction: service ${cpu.service.toFixed(0)} ms, ` +
          `load generator ${cpu.loadgen.toFixed(0)} ms`,
        extra: { connected, result, before, after, cpu },
      },
    ];
  } finally {
    if (loadgen) {
      loadgen.send({ cmd: 'close' });
      await stopChild(loadgen, 5_000);
    }
    await service?.stop();
    temp.remove();
  }
}

/** 5,000 sockets need as many descriptors in the service and in the load generator. */
function checkFileLimit(subscribers) {
  let limit;
  try {
    limit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  } catch {
    return;
  }
  if (Number.isFinite(limit) && limit < subscribers + 512) {
    throw new Error(`open-file limit ${limit} is too low for ${subscribers} sockets per process: run \`ulimit -n ${subscribers + 1024}\` first`);
  }
}

/** One subscriber and one event first, so compilation and JIT warm-up are not in the numbers. */
async function warmUp(wsUrl, api) {
  const socket = new WebSocket(wsUrl, 'graphql-transport-ws');
  const messages = [];
  socket.on('message', (data) => messages.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('open', resolve);
  });
  socket.send(JSON.stringify({ type: 'connection_init' }));
  await until(() => messages.some((m) => m.type === 'connection_ack'), 5_000, 'ack');
  socket.send(JSON.stringify({ id: 'w', type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { id: api.postId } } }));
  // Until the subscription is live (no protocol message says so), react again.
  for (let i = 0; !messages.some((m) => m.type === 'next'); i++) {
    if (i === 50) throw new Error('fanout: the warm-up subscriber got no event');
    await addReaction({ ...api, type: `warmup${i}` });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  socket.close();
}

async function memory(child) {
  child.send({ cmd: 'memory', gc: true });
  return waitForMessage(child, (m) => m.cmd === 'memory', 10_000);
}

async function until(condition, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`fanout: timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function check(message) {
  if (message.error) throw new Error(`load generator: ${message.error}`);
  return message;
}

const kb = (bytes) => (bytes / 1024).toFixed(1);

function log(message) {
  console.error(`[bench] fanout: ${message}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  installCleanup();
  runFanout({}).then(
    (rows) => console.log(`\n${formatTable(rows)}`),
    (error) => {
      console.error(`[bench] fanout crashed: ${error?.stack ?? error}`);
      process.exit(1);
    },
  );
}
