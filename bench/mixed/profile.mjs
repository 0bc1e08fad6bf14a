/**
 * Where Inkwell spends its time on the mixed traffic: one service under `node --cpu-prof`
 * on the bench data, loaded with the mix (bench/mixed/mix.mjs), then its response-cache
 * outcomes (from /metrics) and a CPU summary. Not part of `npm run bench`.
 *
 *   npm run build && node bench/mixed/profile.mjs [--mix=standard|weights|literal|writes|writes-only] [--writes=2] [--write-kinds=addReaction,…] [--drafts=40] [--rate=N] [--postgres] [--top=40] [--keep] [--syscalls] [--root=DIR] [--reference] [--env=NAME=VALUE ...]
 *
 * With --postgres the service runs on PostgreSQL + Redis (Debian's servers, started
 * here). The summary goes to bench/results/profile-mixed-[<mix>-]<writes>[-postgres][-env].txt
 * (the mix named unless standard; `writes` and `writes-only` bring 10 editors).
 * With --syscalls, Linux `perf stat` also counts the service's socket system calls per
 * request (warm-up included): each write to PostgreSQL, Redis or a client is one.
 * With --postgres --statements, pg_stat_statements lists the statements run per request,
 * and Redis's command statistics the commands (scripts' own calls included).
 * With --write-kinds the `writes` mixes write only those kinds (bench/mixed/mix.mjs, WRITE_KINDS).
 * With --drafts=N only the first N of the 40 signed-in accounts own a draft (all by default).
 * With --rate=N the measured run sends N requests per second on schedule (./open-loop.mjs), not 50 closed-loop connections.
 * With --root=DIR the profiled service is another built checkout (e.g. a baseline; the
 * data and accounts are still prepared by this one), and the file name ends in -root.
 * With --node-arg=FLAG (repeatable) the profiled process also runs with that Node flag (e.g. --trace-gc).
 * With --reference the profiled server is the plain reference (bench/reference/) on the
 * same data, with tokens Inkwell signed in (unprofiled), and the file name ends in -reference.
 */
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync, spawn } from 'node:child_process';
import pg from 'pg';
import { installCleanup } from '../lib/children.mjs';
import { waitForQuiet } from '../lib/cpu.mjs';
import { formatSummary, loadProfile, summarise } from '../lib/cpuprofile.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { startService } from '../lib/service.mjs';
import { startReference } from '../reference/start.mjs';
import { insertUsersAndPosts } from '../postgres/seed.mjs';
import { startPostgres, startRedis } from '../postgres/servers.mjs';
import { prepareAccounts, prepareEditors, signIn } from './accounts.mjs';
import { drawWeights } from './mix.mjs';
import { runTraffic } from './traffic.mjs';

const METRICS_TOKEN = 'bench-metrics-token';

async function main() {
  installCleanup();
  const args = process.argv.slice(2);
  const option = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
  const mix = option('mix', 'standard');
  const kinds = option('write-kinds', undefined);
  const writeKinds = kinds ? Object.fromEntries(kinds.split(',').map((k) => [k, 1])) : undefined;
  const writes = mix === 'writes-only' ? 100 : Number(option('writes', mix === 'writes' ? 10 : 0));
  const top = Number(option('top', 30));
  const env = { METRICS_TOKEN };
  for (const arg of args.filter((a) => a.startsWith('--env='))) {
    const [name, ...value] = arg.slice('--env='.length).split('=');
    env[name] = value.join('=');
  }
  const suffix = Object.entries(env).filter(([k]) => k !== 'METRICS_TOKEN').map(([k, v]) => `-${k}=${v}`).join('');
  const resultsDir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });

  const postgres = args.includes('--postgres');
  const root = option('root', undefined);
  const reference = args.includes('--reference');
  const drafts = option('drafts', undefined);
  const rate = option('rate', undefined) && Number(option('rate', undefined));
  const name = `mixed-${mix === 'standard' ? '' : `${mix}-`}${kinds ? `${kinds.replaceAll(',', '+')}-` : ''}${drafts ? `drafts${drafts}-` : ''}${rate ? `rate${rate}-` : ''}${writes}${postgres ? '-postgres' : ''}${suffix}${root ? '-root' : ''}${reference ? '-reference' : ''}`;
  const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });
  const cleanups = [() => db.remove()];
  try {
    let target = { kind: 'sqlite', file: db.dbFile };
    let redisUrl;
    let seeded = db;
    const statements = postgres && args.includes('--statements');
    if (statements) process.env.BENCH_POSTGRES_SETTINGS = `${process.env.BENCH_POSTGRES_SETTINGS ?? ''} shared_preload_libraries=pg_stat_statements`;
    if (postgres) {
      const server = await startPostgres();
      cleanups.push(() => server.stop());
      const redis = await startRedis();
      cleanups.push(() => redis.stop());
      redisUrl = redis.url;
      const url = await server.createDatabase('inkwell_profile');
      Object.assign(env, { DATABASE_URL: url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'bench-profile:' });
      await (await startService({ dbFile: 'unused', env })).stop(); // migrates the empty database
      seeded = await insertUsersAndPosts(url, { users: 100, postsPerUser: 10 });
      if (statements) await withPg(url, (pg) => pg.query('create extension pg_stat_statements').then(() => pg.query('select pg_stat_statements_reset()')));
      target = { kind: 'postgres', url };
    }
    const { accounts, draftIds } = await prepareAccounts(target, { count: 40, drafts: Number(option('drafts', 40)) });
    const editors = await prepareEditors(target, { count: 10, from: 40 });
    const data = { userIds: seeded.userIds, postIds: [...draftIds, ...seeded.postIds], writablePostIds: seeded.postIds, draftIds };
    const profDir = join(db.dir, 'prof-mixed');
    const profile = ['--cpu-prof', `--cpu-prof-dir=${profDir}`, ...args.filter((a) => a.startsWith('--node-arg=')).map((a) => a.slice('--node-arg='.length))];
    // The reference checks the tokens Inkwell issues: Inkwell signs in, the reference is loaded.
    const issuer = 'http://inkwell.bench';
    const service = await startService({ dbFile: db.dbFile, env: { ...env, PUBLIC_URL: issuer }, root, nodeArgs: reference ? [] : profile });
    let loaded = service;
    let result;
    let outcomes;
    let syscalls;
    let statementLines = [];
    try {
      const signedIn = await signIn(service.url, [...accounts, ...editors]);
      if (reference) {
        const databaseUrl = target.kind === 'sqlite' ? `file:${target.file}` : target.url;
        loaded = await startReference({ databaseUrl, issuer, nodeArgs: profile });
      }
      const tokens = signedIn.slice(0, accounts.length);
      const writers = {
        users: accounts.map((a, i) => ({ token: tokens[i], id: a.userId })),
        editors: editors.map((e, i) => ({ token: signedIn[accounts.length + i], id: e.userId, postIds: e.postIds })),
      };
      await waitForQuiet({ log: (m) => console.error(`[profile] ${m}`) });
      console.error(`[profile] ${name}: loading the profiled service`);
      const counting = args.includes('--syscalls') ? countSyscalls(loaded.child.pid) : undefined;
      const weights = mix === 'weights' ? drawWeights(Number(process.env.BENCH_SEED ?? 1)) : undefined;
      result = await runTraffic({ url: loaded.graphqlUrl, data, tokens, writers, kind: mix, weights, writeKinds, writeShare: writes / 100, serverPid: loaded.child.pid, latencyByShape: true, rate });
      if (counting) syscalls = await counting.stop(result.total + (result.warmup?.total ?? 0));
      if (statements) {
        const requests = result.total + (result.warmup?.total ?? 0);
        statementLines = [...(await statementsPerRequest(target.url, requests)), redisCommandsPerRequest(redisUrl, requests)];
      }
      outcomes = reference ? 'none (the reference has no response cache)' : await cacheOutcomes(service.url);
    } finally {
      if (loaded !== service) await loaded.stop();
      await service.stop();
    }
    const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no .cpuprofile written in ${profDir}`);
    const text = [
      `# ${name} — profiled ${reference ? 'reference' : 'service'}${root ? ` (${root})` : ''} (numbers are lower than unprofiled)`,
      `${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms; service ${Math.round(result.serverCpuUsPerReq ?? NaN)} µs CPU/req; ` +
        `response cache (warm-up included): ${outcomes}`,
      `shapes: ${JSON.stringify(result.shapes)}`,
      ...(rate ? [`open loop at ${rate} req/s: p90 ${result.p90} ms, max ${result.max} ms; requests left late by p99 ${result.lateP99} ms, at most ${result.lateMax} ms`] : []),
      ...Object.entries(result.latencyByShape ?? {}).map(([shape, text]) => `  ${shape}: ${text}`),
      ...(syscalls ? [`system calls per request: ${syscalls}`] : []),
      ...statementLines,
      '',
      formatSummary(summarise(loadProfile(join(profDir, file))), { top }),
    ].join('\n');
    console.log(`\n${text}\n`);
    writeFileSync(join(resultsDir, `profile-${name}.txt`), `${text}\n`);
    if (args.includes('--keep')) copyFileSync(join(profDir, file), join(resultsDir, `profile-${name}.cpuprofile`));
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

/** Lines "0.123 calls/req  text…" for the statements run since the reset, most frequent first. */
async function statementsPerRequest(url, requests) {
  const { rows } = await withPg(url, (pg) =>
    pg.query(`select calls, query from pg_stat_statements where query not like '%pg_stat_statements%' order by calls desc limit 25`),
  );
  const total = rows.reduce((sum, row) => sum + Number(row.calls), 0);
  return [
    `PostgreSQL statements per request: ${(total / requests).toFixed(2)} (top 25 shown)`,
    ...rows.map((row) => `  ${(Number(row.calls) / requests).toFixed(3)}  ${row.query.replace(/\s+/g, ' ').slice(0, 160)}`),
  ];
}

/**
 * "Redis: 41 µs CPU per request; commands per request: evalsha 0.12 (9 µs each), …" since
 * Redis started (warm-up and set-up included). Redis's CPU is not in the service's µs/req,
 * but on two cores it takes the same CPU the service needs.
 */
function redisCommandsPerRequest(url, requests) {
  const port = new URL(url).port;
  const info = (section) => execFileSync('redis-cli', ['-p', port, 'info', section], { encoding: 'utf8' });
  const cpu = info('cpu');
  const seconds = ['used_cpu_sys', 'used_cpu_user'].reduce((sum, name) => sum + Number(cpu.match(new RegExp(`${name}:([\\d.]+)`))?.[1] ?? 0), 0);
  const calls = [...info('commandstats').matchAll(/cmdstat_(\w+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/g)]
    .map(([, name, n, usec]) => [name, Number(n) / requests, Number(usec)])
    .sort((a, b) => b[1] - a[1]);
  const perRequest = ((seconds * 1e6) / requests).toFixed(0);
  return `Redis: ${perRequest} µs CPU per request; commands per request: ${calls.map(([name, n, usec]) => `${name} ${n.toFixed(2)} (${usec.toFixed(1)} µs each)`).join(', ')}`;
}

async function withPg(url, fn) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const SYSCALLS = ['writev', 'write', 'sendto', 'sendmsg', 'read', 'recvfrom', 'epoll_wait'];

/** `perf stat` on the service; stop(requests) resolves with "writev 2.10, read 3.05, …" per request. */
function countSyscalls(pid) {
  const events = SYSCALLS.map((name) => `syscalls:sys_enter_${name}`).join(',');
  const perf = spawn('perf', ['stat', '-x', ',', '-e', events, '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  perf.stderr.on('data', (chunk) => (text += chunk));
  const exited = new Promise((resolve) => perf.once('close', resolve));
  return {
    async stop(requests) {
      perf.kill('SIGINT');
      await exited;
      const counts = text.split('\n').map((line) => line.split(',')).filter((cells) => cells[2]?.startsWith('syscalls:'));
      return counts.map(([count, , event]) => `${event.slice('syscalls:sys_enter_'.length)} ${(Number(count) / requests).toFixed(2)}`).join(', ');
    },
  };
}

/** "hit N, miss M (H % hits)" from the service's own counters. */
async function cacheOutcomes(url) {
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await response.text();
  const count = (outcome) => Number(new RegExp(`inkwell_response_cache_requests_total\\{outcome="${outcome}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
  const [hit, miss] = [count('hit'), count('miss')];
  return `hit ${hit}, miss ${miss} (${((100 * hit) / Math.max(1, hit + miss)).toFixed(1)} % hits)`;
}

main().catch((error) => {
  console.error(`[profile] crashed: ${error?.stack ?? error}`);
  process.exit(1);
});
