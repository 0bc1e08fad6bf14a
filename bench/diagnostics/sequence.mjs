// A diagnostic, not a measurement: one SQLite service (with --postgres, one on a throwaway
// PostgreSQL and Redis) given a sequence of the mixed bench's traffic, closed loop or at a
// fixed rate, printing for each step its req/s, CPU µs per request, the client's latencies,
// and how many requests the service's own histogram (inkwell_request_duration_seconds: from
// Fastify's request to the response's end) timed over 25, 50 and 100 ms. It reproduces in
// ~5 minutes a state that the full bench reaches after ~35 (bench/results/fixed-rate.md,
// "Eighth and ninth runs"):
//
//   npm run build && SEQUENCE=standard:0,standard:10,weights:0,weights:10,literal:0,literal:0,literal:10,literal:10,writes:10,writes:10,writes-only,writes-only,writes-only,writes-only@2100,writes-only@2100 \
//     node bench/diagnostics/sequence.mjs [--env=NAME=VALUE ...] [--node-arg=FLAG ...]
//
// A step is `mix[:writes %][@rate]`, mixes as in bench/mixed/mix.mjs; with @rate it is sent
// open loop at that many requests per second. --env=NODE_OPTIONS=--require=…/process-probe.cjs
// adds the per-thread probe beside it; --node-arg=--trace-gc (or any flag NODE_OPTIONS refuses)
// goes to the measured server's node (with --reference, the reference's). With --reference the steps go to the plain reference
// (bench/reference/) on the same database instead, Inkwell only signing the accounts in:
// the same sequence, for comparison (its own histogram is not read). A step `restart` starts
// the service afresh on the same database.
import { readFileSync, statSync } from 'node:fs';
import { installCleanup } from '../lib/children.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { startService } from '../lib/service.mjs';
import { startReference } from '../reference/start.mjs';
import { insertUsersAndPosts } from '../postgres/seed.mjs';
import { startPostgres, startRedis } from '../postgres/servers.mjs';
import { prepareAccounts, prepareEditors, signIn } from '../mixed/accounts.mjs';
import { drawWeights } from '../mixed/mix.mjs';
import { runTraffic } from '../mixed/traffic.mjs';

const METRICS_TOKEN = 'bench-metrics-token';

async function main() {
  installCleanup();
  const env = { METRICS_TOKEN, PUBLIC_URL: 'http://inkwell.bench' };
  for (const arg of process.argv.slice(2).filter((a) => a.startsWith('--env='))) {
    const [name, ...value] = arg.slice('--env='.length).split('=');
    env[name] = value.join('=');
  }
  const { db, target } = process.argv.includes('--postgres') ? await postgres(env) : await sqlite();
  const { accounts, draftIds } = await prepareAccounts(target, { count: 40 });
  const editors = await prepareEditors(target, { count: 10, from: 40 });
  const data = { userIds: db.userIds, postIds: [...draftIds, ...db.postIds], writablePostIds: db.postIds, draftIds };
  const nodeArgs = process.argv.slice(2).filter((a) => a.startsWith('--node-arg=')).map((a) => a.slice('--node-arg='.length));
  const toReference = process.argv.includes('--reference');
  // The node flags go to the server measured: with --reference, the reference.
  let service = await startService({ dbFile: db.dbFile ?? 'unused', env, nodeArgs: toReference ? [] : nodeArgs });
  try {
    const signedIn = await signIn(service.url, [...accounts, ...editors]);
    const reference = toReference
      ? await startReference({ databaseUrl: env.DATABASE_URL ?? `file:${db.dbFile}`, issuer: env.PUBLIC_URL, nodeArgs })
      : undefined;
    let server = reference ?? service;
    const tokens = signedIn.slice(0, accounts.length);
    const writers = {
      users: accounts.map((a, i) => ({ token: tokens[i], id: a.userId })),
      editors: editors.map((e, i) => ({ token: signedIn[accounts.length + i], id: e.userId, postIds: e.postIds })),
    };
    for (const step of (process.env.SEQUENCE ?? 'writes-only,writes-only@2000').split(',')) {
      if (step === 'restart') {
        // A fresh process on the same database: what a long run left in the data, not in the process.
        await service.stop();
        service = await startService({ dbFile: db.dbFile ?? 'unused', env, nodeArgs });
        server = reference ?? service;
        console.log('restart: a new service on the same database');
        continue;
      }
      const [mixAndWrites, rate] = step.split('@');
      const [kind, writesText] = mixAndWrites.split(':');
      const writes = kind === 'writes-only' ? 100 : Number(writesText ?? (kind === 'writes' ? 10 : 0));
      const weights = kind === 'weights' ? drawWeights(Number(process.env.BENCH_SEED ?? 1)) : undefined;
      const before = reference ? NO_COUNTS : await slowCounts(service.url);
      const started = Date.now();
      let walMax = 0;
      const walPoll = setInterval(() => (walMax = Math.max(walMax, walBytes(db.dbFile))), 20);
      const r = await runTraffic({ url: server.graphqlUrl, data, tokens, writers, kind, weights, writeShare: writes / 100, serverPid: server.child.pid, rate: rate && Number(rate) });
      clearInterval(walPoll);
      const after = reference ? NO_COUNTS : await slowCounts(service.url);
      console.log(
        `${step}: ${Math.round(r.rps)} req/s, ${Math.round(r.serverCpuUsPerReq)} µs/req; client p50 ${r.p50}, p90 ${r.p90}, p99 ${r.p99}, max ${r.max} ms; ` +
          `the service's own over 25 ms ${after.over25 - before.over25}, over 50 ms ${after.over50 - before.over50}, over 100 ms ${after.over100 - before.over100}, of ${after.all - before.all}; RSS ${rssMb(server.child.pid)} MB; WAL up to ${(walMax / 2 ** 20).toFixed(1)} MiB; wall ms ${started}–${Date.now()}`,
      );
      if (r.bursts?.length) console.log(`  over 50 ms, by when due (s: count, max ms): ${r.bursts.map((b) => `${b.at}: ${b.count}, ${b.max}`).join('; ')}`);
    }
    await reference?.stop();
  } finally {
    await service.stop();
    await db.remove();
  }
}

const SHAPE = { users: 100, postsPerUser: 10 };

async function sqlite() {
  const db = await createBenchDatabase(SHAPE);
  return { db, target: { kind: 'sqlite', file: db.dbFile } };
}

/** A throwaway cluster and Redis, as bench/mixed/run.mjs starts them; BENCH_POSTGRES_SETTINGS adds settings (logging, say). */
async function postgres(env) {
  const server = await startPostgres();
  const redis = await startRedis();
  const url = await server.createDatabase('inkwell_sequence');
  await (await startService({ dbFile: 'unused', env: { DATABASE_URL: url } })).stop(); // migrates the empty database
  const seeded = await insertUsersAndPosts(url, SHAPE);
  Object.assign(env, { DATABASE_URL: url, REDIS_URL: redis.url });
  const remove = () => Promise.all([server.stop(), redis.stop()]);
  return { db: { ...seeded, remove }, target: { kind: 'postgres', url } };
}

const NO_COUNTS = { all: 0, over25: 0, over50: 0, over100: 0 };

/** Requests the service timed, and those over 25, 50 and 100 ms, from its histogram's buckets. */
async function slowCounts(url) {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  const upTo = (le) =>
    [...text.matchAll(new RegExp(`inkwell_request_duration_seconds_bucket\\{[^}]*le="${le}"[^}]*\\} (\\d+)`, 'g'))].reduce((sum, m) => sum + Number(m[1]), 0);
  const all = upTo('\\+Inf');
  return { all, over25: all - upTo('0.025'), over50: all - upTo('0.05'), over100: all - upTo('0.1') };
}

/** The WAL file's size, 0 while there is none. */
function walBytes(file) {
  try {
    return statSync(`${file}-wal`).size;
  } catch {
    return 0;
  }
}

const rssMb = (pid) => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1e3);

main().catch((error) => {
  console.error(`[sequence] crashed: ${error?.stack ?? error}`);
  process.exit(1);
});
