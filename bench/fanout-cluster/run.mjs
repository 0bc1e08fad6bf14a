/**
 * Two-instance fan-out (issue 5): WebSocket subscribers of one post split across two
 * instances on one PostgreSQL and one Redis, reactions added through one of them.
 * Reports publish→receipt p50/p99 against the same number of subscribers on ONE
 * instance of the same deployment (PostgreSQL + Redis), measured the same way.
 * Target: cross-instance p99 ≤ 2× single-instance p99.
 *
 * Run by bench/postgres/run.mjs (which starts PostgreSQL and Redis), or alone:
 *   npm run build && node bench/postgres/run.mjs fanout-cluster
 *   BENCH_FANOUT_CLUSTER_SUBSCRIBERS=5000 BENCH_FANOUT_REACTIONS=100
 *
 * Reuses the fan-out bench's load generator (bench/fanout/loadgen.mjs): its `connect`
 * is sent once per instance, so one process holds every socket and times every delivery
 * against the reaction's server-side `createdAt`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { forkTracked, stopChild, waitForMessage } from '../lib/children.mjs';
import { waitForQuiet } from '../lib/cpu.mjs';
import { ROOT, startService } from '../lib/service.mjs';
import { signUp } from '../fanout/api.mjs';
import { insertUsersAndPosts } from '../postgres/seed.mjs';

const LOADGEN = fileURLToPath(new URL('../fanout/loadgen.mjs', import.meta.url));
const TARGET_RATIO = 2;

/** `servers`: the running { postgres, redis } from bench/postgres/servers.mjs. Returns table rows. */
export async function runFanoutCluster({ postgres, redis }) {
  const subscribers = Number(process.env.BENCH_FANOUT_CLUSTER_SUBSCRIBERS ?? process.env.BENCH_FANOUT_SUBSCRIBERS ?? 5_000);
  const reactions = Number(process.env.BENCH_FANOUT_REACTIONS ?? 100);
  checkFileLimit(subscribers);
  const databaseUrl = await postgres.createDatabase('inkwell_fanout');
  const env = { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'fanout:' };
  const a = await startService({ dbFile: 'unused', env }); // migrates
  const b = await startService({ dbFile: 'unused', env });
  try {
    const [postId] = (await insertUsersAndPosts(databaseUrl, { users: 1, postsPerUser: 1 })).postIds;
    const api = { graphqlUrl: a.graphqlUrl, token: await signUp(a.url), postId };
    const ws = (service) => `${service.url.replace(/^http/, 'ws')}/graphql`;
    const half = Math.floor(subscribers / 2);

    log(`single instance: ${subscribers} subscribers on A, reactions through A`);
    const single = await measure([{ url: ws(a), count: subscribers }], api, reactions, 'single');
    log(`two instances: ${half} on A + ${subscribers - half} on B, reactions through A`);
    const cross = await measure([{ url: ws(a), count: half }, { url: ws(b), count: subscribers }], api, reactions, 'cross');

    const ratio = cross.p99 / single.p99;
    const common = `req/s column = deliveries/s; p50/p99 = publish→receipt over ${reactions} reactions`;
    return [
      {
        scenario: `fanout, 1 instance (PostgreSQL + Redis): ${subscribers.toLocaleString('en-US')} subscribers`,
        service: { rps: single.messagesPerSecond, p50: single.p50, p99: single.p99 },
        ceiling: null,
        notes: `${common}; the baseline of the next row; delivered ${single.received}/${single.expected}, max ${single.max} ms`,
      },
      {
        scenario: `fanout, 2 instances (PostgreSQL + Redis): ${half.toLocaleString('en-US')} + ${(subscribers - half).toLocaleString('en-US')} subscribers`,
        service: { rps: cross.messagesPerSecond, p50: cross.p50, p99: cross.p99 },
        ceiling: null,
        ratio,
        pass: cross.received === cross.expected && ratio <= TARGET_RATIO,
        notes:
          `${common}; ratio = p99 ÷ single-instance p99, target ≤ ${TARGET_RATIO}×; ` +
          `delivered ${cross.received}/${cross.expected}, max ${cross.max} ms`,
      },
    ];
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

/** Opens the sockets (`targets`: [{url, count}] with cumulative counts), proves them live, then times `reactions`. */
async function measure(targets, api, reactions, prefix) {
  const loadgen = forkTracked(LOADGEN, [], { cwd: ROOT });
  try {
    await waitForMessage(loadgen, (m) => m.cmd === 'ready');
    for (const target of targets) {
      loadgen.send({ cmd: 'connect', url: target.url, postId: api.postId, count: target.count });
      check(await waitForMessage(loadgen, (m) => m.cmd === 'connect', 300_000));
    }
    const total = targets.at(-1).count;
    // Barriers: one event every subscriber receives proves every subscription is live
    // (on B, subscribed in Redis); the second one runs warm.
    for (const round of [1, 2]) {
      loadgen.send({ cmd: 'react', ...api, reactions: 1, prefix: `${prefix}barrier${round}x`, timeoutMs: 60_000 });
      const barrier = check(await waitForMessage(loadgen, (m) => m.cmd === 'react', 120_000));
      if (barrier.received !== total) throw new Error(`only ${barrier.received} of ${total} subscribers got the barrier event`);
    }
    await waitForQuiet({ log });
    loadgen.send({ cmd: 'react', ...api, reactions, prefix: `${prefix}x` });
    const result = check(await waitForMessage(loadgen, (m) => m.cmd === 'react', 300_000));
    log(`${prefix}: ${result.received}/${result.expected} delivered; p50 ${result.p50} ms, p99 ${result.p99} ms`);
    return result;
  } finally {
    loadgen.send({ cmd: 'close' });
    await stopChild(loadgen, 5_000);
  }
}

function checkFileLimit(subscribers) {
  let limit;
  try {
    limit = Number(execFileSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).trim());
  } catch {
    return;
  }
  if (Number.isFinite(limit) && limit < subscribers + 512) {
    throw new Error(`open-file limit ${limit} is too low for ${subscribers} sockets: run \`ulimit -n ${subscribers + 1024}\` first`);
  }
}

function check(message) {
  if (message.error) throw new Error(`load generator: ${message.error}`);
  return message;
}

function log(message) {
  console.error(`[bench] fanout-cluster: ${message}`);
}
