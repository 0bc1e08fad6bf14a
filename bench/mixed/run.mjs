/**
 * Issue 11's realistic-traffic bench, run by bench/run.mjs when this file exists:
 * Inkwell against the plain reference (bench/reference/) on the same data, side by
 * side in interleaved rounds, on SQLite and on PostgreSQL + Redis:
 *
 * - mixed traffic (bench/mixed/mix.mjs) with 0, 2 and 10 % writes, Inkwell's response
 *   cache on, then off (RESPONSE_CACHE_MB=0); targets 0 % ≥ 3×, 2 % ≥ 2×, cache off ≥ 1×;
 * - the nested query uncached (Inkwell with RESPONSE_CACHE_MB=0), target ≥ 0.5×;
 * - the mix (0 % writes, cache off) on 45 connections beside the nested query on 5: does
 *   a heavy request hold up the light ones? The row is the mix's; its p99 < 50 ms;
 * - Inkwell on PostgreSQL + Redis ÷ Inkwell on SQLite for each mix, target ≥ 0.6×;
 * - Inkwell's p99 < 50 ms in every row.
 *
 *   npm run build && node bench/mixed/run.mjs [mixed] [nested] [--env=NAME=VALUE ...]
 *   BENCH_MIXED_WRITES=0,2,10 BENCH_MIXED_CACHE=on,off BENCH_MIXED_DBS=sqlite,postgres
 *   BENCH_MIXED_ACCOUNTS=40 BENCH_MIXED_SIGNED_IN=0.4 (defaults)
 *
 * Each implementation gets its own copy of the data (the reference's writes must not
 * go behind Inkwell's caches, nor Inkwell's behind the reference); the sessions of the
 * tokens Inkwell hands out are copied into the reference's copy.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { installCleanup } from '../lib/children.mjs';
import { cpuMsOf, waitForQuiet } from '../lib/cpu.mjs';
import { LOAD_DEFAULTS, runLoad } from '../lib/load.mjs';
import { ROUNDS } from '../lib/scenario.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { startService } from '../lib/service.mjs';
import { formatTables } from '../lib/table.mjs';
import { insertUsersAndPosts } from '../postgres/seed.mjs';
import { missingServers, query, startPostgres, startRedis } from '../postgres/servers.mjs';
import { startReference } from '../reference/start.mjs';
import { copySqliteDatabase, prepareAccounts, tokenKeeper } from './accounts.mjs';
import { checkParity, sameAnswer } from './parity.mjs';
import { runTraffic } from './traffic.mjs';

const SHAPE = { users: 100, postsPerUser: 10 };
/** PUBLIC_URL of every Inkwell here: the token issuer, the same whichever instance signed a token in. */
const ISSUER = 'http://inkwell.bench';
const list = (value) => value.split(',').map((s) => s.trim()).filter(Boolean);
const WRITES = list(process.env.BENCH_MIXED_WRITES ?? '0,2,10').map(Number);
const CACHES = list(process.env.BENCH_MIXED_CACHE ?? 'on,off');
const DBS = list(process.env.BENCH_MIXED_DBS ?? 'sqlite,postgres');
const ACCOUNTS = Number(process.env.BENCH_MIXED_ACCOUNTS ?? 40);
const SIGNED_IN = Number(process.env.BENCH_MIXED_SIGNED_IN ?? 0.4);

const P99_MAX_MS = 50;
/** Connections of the nested query beside the mix (of LOAD_DEFAULTS.connections in all). */
const BESIDE_NESTED = 5;
const NESTED_QUERY = '{ users(limit: 100) { posts(limit: 10) { author { id name } } } }';
/** Issue 11's targets, Inkwell ÷ reference. */
const target = (cache, writes) => (cache === 'off' ? 1 : { 0: 3, 2: 2 }[writes]);
const NESTED_TARGET = 0.5;
const BACKENDS_TARGET = 0.6;

/** `ctx` from bench/run.mjs ({ only, load, env, … }); returns table rows. */
export async function runMixed(ctx = {}) {
  const only = (ctx.only ?? []).map((name) => name.toLowerCase());
  const wantMixed = only.length === 0 || only.includes('mixed');
  const wantNested = only.length === 0 || only.includes('nested');
  if (!wantMixed && !wantNested) return [];
  const load = { ...LOAD_DEFAULTS, ...ctx.load };
  const rows = [];
  const backends = [];
  const cleanups = [];
  try {
    for (const name of DBS) {
      if (name === 'postgres' && missingServers()) {
        rows.push({ table: 'reference', scenario: 'mixed and nested on PostgreSQL + Redis (skipped)', service: null, ceiling: null, notes: missingServers() });
        continue;
      }
      if (name !== 'sqlite' && name !== 'postgres') throw new Error(`BENCH_MIXED_DBS: unknown database ${name}`);
      log(`${name}: preparing the data`);
      const backend = name === 'sqlite' ? await prepareSqlite(cleanups) : await preparePostgres(cleanups);
      backend.reference = await startReference({ databaseUrl: backend.referenceUrl, issuer: ISSUER });
      cleanups.push(() => backend.reference.stop());
      backends.push(backend);
    }

    const groups = ['on', 'off'].filter((c) => (wantMixed && CACHES.includes(c)) || (wantNested && c === 'off'));
    let checked = false;
    for (const cache of groups) {
      const env = { ...ctx.env, PUBLIC_URL: ISSUER, ...(cache === 'off' ? { RESPONSE_CACHE_MB: '0' } : {}) };
      try {
        for (const b of backends) b.inkwell = await startService({ dbFile: b.dbFile ?? 'unused', env: { ...env, ...b.env } });
        if (!checked) {
          for (const b of backends) {
            const tokens = await b.tokens(b.inkwell);
            const n = await checkParity({ inkwell: b.inkwell, reference: b.reference, data: b.data, accounts: b.accounts, tokens, targets: b.targets });
            log(`${b.name}: the reference answers like Inkwell (${n} requests compared)`);
          }
          checked = true;
        }
        if (wantMixed && CACHES.includes(cache)) {
          for (const writes of WRITES) rows.push(...(await measureMix({ backends, cache, writes, load })));
        }
        if (wantNested && cache === 'off') {
          for (const b of backends) rows.push(await measureNested({ b, load }));
          if (wantMixed) for (const b of backends) rows.push(await measureBeside({ b, load }));
        }
      } finally {
        for (const b of backends) await b.inkwell?.stop();
      }
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
  return rows;
}

async function prepareSqlite(cleanups) {
  const db = await createBenchDatabase(SHAPE);
  cleanups.push(() => db.remove());
  const target = { kind: 'sqlite', file: db.dbFile };
  const { accounts, draftIds } = await prepareAccounts(target, { count: ACCOUNTS });
  const referenceFile = join(db.dir, 'reference.db');
  copySqliteDatabase(db.dbFile, referenceFile);
  const referenceTarget = { kind: 'sqlite', file: referenceFile };
  return {
    name: 'sqlite',
    label: 'SQLite',
    dbFile: db.dbFile,
    env: {},
    referenceUrl: `file:${referenceFile}`,
    targets: { inkwell: target, reference: referenceTarget },
    data: dataOf(db, draftIds),
    accounts,
    tokens: tokenKeeper({ accounts, target, referenceTarget }),
  };
}

async function preparePostgres(cleanups) {
  const postgres = await startPostgres();
  cleanups.push(() => postgres.stop());
  const redis = await startRedis();
  cleanups.push(() => redis.stop());
  const url = await postgres.createDatabase('inkwell_mixed');
  const env = { DATABASE_URL: url, REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'bench-mixed:' };
  await (await startService({ dbFile: 'unused', env })).stop(); // migrates the empty database
  const seeded = await insertUsersAndPosts(url, SHAPE);
  const target = { kind: 'postgres', url };
  const { accounts, draftIds } = await prepareAccounts(target, { count: ACCOUNTS });
  await query(postgres.url, 'create database inkwell_mixed_ref template inkwell_mixed');
  const referenceUrl = url.replace(/\/inkwell_mixed$/, '/inkwell_mixed_ref');
  const referenceTarget = { kind: 'postgres', url: referenceUrl };
  return {
    name: 'postgres',
    label: 'PostgreSQL + Redis',
    env,
    referenceUrl,
    targets: { inkwell: target, reference: referenceTarget },
    data: dataOf(seeded, draftIds),
    accounts,
    tokens: tokenKeeper({ accounts, target, referenceTarget }),
  };
}

/** Reads may hit drafts (null for most callers); writes go to published posts. */
function dataOf({ userIds, postIds }, draftIds) {
  return { userIds, postIds: [...draftIds, ...postIds], writablePostIds: postIds, draftIds };
}

/** Rounds of (reference, Inkwell) per backend, interleaved; one row per backend, plus PostgreSQL ÷ SQLite. */
async function measureMix({ backends, cache, writes, load }) {
  const name = `mixed ${writes} % writes, cache ${cache}`;
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const results = {};
    for (const b of backends) {
      const traffic = { data: b.data, writeShare: writes / 100, signedInShare: SIGNED_IN, ...load };
      const tokens = await b.tokens(b.inkwell);
      log(`${name} — ${b.label}: round ${round + 1}/${ROUNDS}, reference then Inkwell`);
      await waitForQuiet(quiet(name));
      const reference = await runTraffic({ ...traffic, tokens, url: b.reference.graphqlUrl, serverPid: b.reference.child.pid });
      await waitForIdle(b.reference.child.pid);
      await waitForQuiet(quiet(name));
      const inkwell = await runTraffic({ ...traffic, tokens, url: b.inkwell.graphqlUrl, serverPid: b.inkwell.child.pid });
      await waitForIdle(b.inkwell.child.pid);
      log(`${name} — ${b.label}: Inkwell ${Math.round(inkwell.rps)} req/s, reference ${Math.round(reference.rps)} req/s`);
      results[b.name] = { service: inkwell, ceiling: reference, ratio: inkwell.rps / reference.rps };
    }
    rounds.push(results);
  }
  const rows = backends.map((b) =>
    row({
      table: 'reference',
      scenario: `${name} — ${b.label}`,
      rounds: rounds.map((r) => r[b.name]),
      target: target(cache, writes),
      sides: ['Inkwell', 'reference'],
    }),
  );
  if (backends.length === 2) {
    const pairs = rounds.map((r) => ({ service: r.postgres.service, ceiling: r.sqlite.service, ratio: r.postgres.service.rps / r.sqlite.service.rps }));
    rows.push(row({ table: 'backends', scenario: `${name} — Inkwell`, rounds: pairs, target: BACKENDS_TARGET, sides: ['PostgreSQL', 'SQLite'] }));
  }
  return rows;
}

/** The nested query, one body, against Inkwell without its response cache. */
async function measureNested({ b, load }) {
  const name = `nested users(100) × posts(10) × author, uncached — ${b.label}`;
  const body = JSON.stringify({ query: NESTED_QUERY });
  await sameAnswer({ inkwell: b.inkwell, reference: b.reference, body, what: 'the nested query' });
  const expect = async (url) => (await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text());
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`${name}: round ${round + 1}/${ROUNDS}, reference then Inkwell`);
    await waitForQuiet(quiet(name));
    const reference = await runLoad({ ...load, url: b.reference.graphqlUrl, body, expectBody: await expect(b.reference.graphqlUrl), serverPid: b.reference.child.pid });
    await waitForIdle(b.reference.child.pid);
    await waitForQuiet(quiet(name));
    const inkwell = await runLoad({ ...load, url: b.inkwell.graphqlUrl, body, expectBody: await expect(b.inkwell.graphqlUrl), serverPid: b.inkwell.child.pid });
    await waitForIdle(b.inkwell.child.pid);
    log(`${name}: Inkwell ${Math.round(inkwell.rps)} req/s, reference ${Math.round(reference.rps)} req/s`);
    rounds.push({ service: inkwell, ceiling: reference, ratio: inkwell.rps / reference.rps });
  }
  return row({ table: 'reference', scenario: name, rounds, target: NESTED_TARGET, sides: ['Inkwell', 'reference'] });
}

/**
 * The mix (read-only, signed-in share as usual) on all but BESIDE_NESTED connections
 * while those send the nested query, each implementation uncached. The row shows the
 * mix: its rate as a ratio and its p99 against the target; the notes give the nested
 * query's rate and p99 beside it. Server CPU is not split between the two.
 */
async function measureBeside({ b, load }) {
  const name = `mixed 0 % writes beside the nested query on ${BESIDE_NESTED} connections, cache off — ${b.label}`;
  const body = JSON.stringify({ query: NESTED_QUERY });
  const connections = load.connections - BESIDE_NESTED;
  const both = async (server) => {
    const tokens = await b.tokens(b.inkwell);
    const [mix, nested] = await Promise.all([
      runTraffic({ ...load, connections, data: b.data, tokens, signedInShare: SIGNED_IN, url: server.graphqlUrl }),
      runLoad({ ...load, connections: BESIDE_NESTED, url: server.graphqlUrl, body }),
    ]);
    return { ...mix, nested };
  };
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`${name}: round ${round + 1}/${ROUNDS}, reference then Inkwell`);
    await waitForQuiet(quiet(name));
    const reference = await both(b.reference);
    await waitForIdle(b.reference.child.pid);
    await waitForQuiet(quiet(name));
    const inkwell = await both(b.inkwell);
    await waitForIdle(b.inkwell.child.pid);
    log(`${name}: Inkwell ${Math.round(inkwell.rps)} req/s (p99 ${inkwell.p99} ms), reference ${Math.round(reference.rps)} req/s (p99 ${reference.p99} ms)`);
    rounds.push({ service: inkwell, ceiling: reference, ratio: inkwell.rps / reference.rps });
  }
  const result = row({ table: 'reference', scenario: name, rounds, target: undefined, sides: ['Inkwell', 'reference'] });
  const median = rounds.find((r) => r.service === result.service);
  const nestedNote = (who, r) => `${who} nested ${Math.round(r.nested.rps)} req/s, p50 ${r.nested.p50} ms, p99 ${r.nested.p99} ms`;
  const problems = rounds.flatMap((r) => [...problemsOf('Inkwell nested', r.service.nested), ...problemsOf('reference nested', r.ceiling.nested)]);
  return {
    ...result,
    ...(problems.length > 0 ? { pass: false } : {}),
    notes: [nestedNote('Inkwell', median.service), nestedNote('reference', median.ceiling), ...new Set(problems), result.notes].filter(Boolean).join('; '),
  };
}

/** The round with the median ratio, with p99 target and notes; any wrong answer makes the row fail. */
function row({ table, scenario, rounds, target, sides }) {
  const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
  const problems = rounds.flatMap((r) => [...problemsOf(sides[0], r.service), ...problemsOf(sides[1], r.ceiling)]);
  const roundNote = rounds.length > 1 ? `rounds ${rounds.map((r) => `${r.ratio.toFixed(2)}×`).join(', ')} (median shown)` : '';
  return {
    table,
    scenario,
    service: median.service,
    ceiling: median.ceiling,
    ratio: median.ratio,
    target,
    ...(problems.length > 0 ? { pass: false } : {}),
    ...(table === 'reference' ? { p99Max: P99_MAX_MS } : {}),
    notes: [...cpuNotes(sides, median), ...[...new Set(problems)].slice(0, 4), roundNote].filter(Boolean).join('; '),
  };
}

const pct = (x) => (x === undefined ? '?' : `${Math.round(x * 100)}%`);

function cpuNotes([a, b], { service, ceiling }) {
  const cpu = (r) => (r.serverCpuUsPerReq === undefined ? '' : `${Math.round(r.serverCpuUsPerReq)} µs/req, ${pct(r.serverCpu)} CPU`);
  const notes = [`${a} ${cpu(service)}`, `${b} ${cpu(ceiling)}`, `gen ${pct(service.generatorCpu)}/${pct(ceiling.generatorCpu)}`, `other ${pct(service.otherCpu)}/${pct(ceiling.otherCpu)}`];
  if (service.serverCpuUsPerReq && ceiling.serverCpuUsPerReq) {
    notes.unshift(`CPU ratio ${(ceiling.serverCpuUsPerReq / service.serverCpuUsPerReq).toFixed(2)}×`);
  }
  return notes;
}

/** Wrong answers anywhere in a run (warm-up included). */
function problemsOf(who, r) {
  const out = [];
  for (const [phase, x] of [['', r], ['warm-up ', r.warmup]]) {
    if (!x) continue;
    const bad = x.non2xx + x.errors + x.timeouts;
    if (bad > 0) out.push(`${who} ${phase}${x.non2xx} non-2xx, ${x.errors} errors, ${x.timeouts} timeouts`);
    if (x.badBodies) out.push(`${who} ${phase}${x.badBodies} wrong answers, e.g. ${String(x.firstBad).slice(0, 200)}`);
    if (x.mismatches) out.push(`${who} ${phase}${x.mismatches} wrong bodies`);
  }
  return out;
}

/**
 * When the load generator stops, up to 50 requests it gave up on are still being
 * worked on (a nested query under load: seconds). Wait until the server's own CPU use
 * stops (at most one 10 ms clock tick in 250 ms; 20 s at most), so that work neither overlaps the next
 * run nor meets a shutdown.
 */
async function waitForIdle(pid, maxMs = 20_000) {
  const deadline = Date.now() + maxMs;
  let before = cpuMsOf(pid);
  while (before !== undefined && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = cpuMsOf(pid);
    if (now === undefined || now - before <= 10) return;
    before = now;
  }
}

const quiet = (name) => ({ log: (m) => log(`${name}: ${m}`) });

function log(message) {
  console.error(`[bench] mixed: ${message}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  installCleanup();
  const args = process.argv.slice(2);
  const env = Object.fromEntries(
    args.filter((a) => a.startsWith('--env=')).map((a) => {
      const [name, ...value] = a.slice('--env='.length).split('=');
      return [name, value.join('=')];
    }),
  );
  runMixed({ only: args.filter((a) => !a.startsWith('--')), env }).then(
    (rows) => console.log(`\n${formatTables(rows)}`),
    (error) => {
      console.error(`[bench] mixed crashed: ${error?.stack ?? error}`);
      process.exit(1);
    },
  );
}
