/**
 * The realistic-traffic bench (issues 11 and 20), run by bench/run.mjs when this file
 * exists: Inkwell against the plain reference (bench/reference/) on the same data, side
 * by side in interleaved rounds, on SQLite and on PostgreSQL + Redis, over several mixes
 * (bench/mixed/mix.mjs; bench/README.md says what each exercises):
 *
 * - `standard` (0, 2, 10 % writes), `weights` (seeded proportions), `literal` (ids in the
 *   documents), `writes` (10 % writes of every kind), `writes-only`: each with Inkwell's
 *   response cache on and off (RESPONSE_CACHE_MB=0; entity caches stay on);
 * - `nested`: the nested query uncached, and the standard read mix beside it;
 * - with BENCH_BASELINE=<built checkout>, that build of Inkwell measured beside the current
 *   one in every round (a "current ÷ baseline" ratio per row);
 * - Inkwell on PostgreSQL + Redis ÷ Inkwell on SQLite for each row.
 *
 *   npm run build && node bench/mixed/run.mjs [mixed] [nested] [standard weights …] [--env=NAME=VALUE ...] [--node-arg=FLAG ...]
 *   BENCH_MIXES=standard,weights,literal,nested,writes,writes-only BENCH_MIXED_DBS=sqlite,postgres
 *   BENCH_MIXED_WRITES (read mixes; default standard 0,2,10, weights and literal 2) BENCH_MIXED_CACHE=on,off
 *   BENCH_SEED (random) BENCH_BASELINE (unset) BENCH_MIXED_ACCOUNTS=40 BENCH_MIXED_EDITORS=10 BENCH_MIXED_SIGNED_IN=0.4
 *
 * Every server gets its own copy of the data (nobody's writes go behind another's
 * caches); the sessions of the tokens Inkwell hands out are copied into every copy.
 * In each round every server runs the same request sequence (one seed per round).
 */
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { alone, pausable } from '../lib/alone.mjs';
import { installCleanup } from '../lib/children.mjs';
import { median, problemsOf, roundsRow } from '../lib/rounds.mjs';
import { cpuMsOf, waitForQuiet } from '../lib/cpu.mjs';
import { describeStalls, startDiskProbe } from '../lib/disk-probe.mjs';
import { LOAD_DEFAULTS, runLoad } from '../lib/load.mjs';
import { ROUNDS } from '../lib/scenario.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { startService } from '../lib/service.mjs';
import { formatTables } from '../lib/table.mjs';
import { insertUsersAndPosts } from '../postgres/seed.mjs';
import { missingServers, query, startPostgres, startRedis } from '../postgres/servers.mjs';
import { REFERENCE_POOL_SIZE, startReference } from '../reference/start.mjs';
import { copySqliteDatabase, prepareAccounts, prepareEditors, rowCounts, tokenKeeper } from './accounts.mjs';
import { drawWeights, READ_SHAPES, readShares, seededRandom, WRITE_KINDS } from './mix.mjs';
import { BURST_WINDOW_MS, SLOW_MS } from './open-loop.mjs';
import { checkParity, sameAnswer } from './parity.mjs';
import { runTraffic } from './traffic.mjs';

const SHAPE = { users: 100, postsPerUser: 10 };
/** PUBLIC_URL of every Inkwell here: the token issuer, the same whichever instance signed a token in. */
const ISSUER = 'http://inkwell.bench';
const list = (value) => value.split(',').map((s) => s.trim()).filter(Boolean);

/** Every mix, in the order they run: the writes last, as they grow the data the reads read. */
export const MIX_NAMES = ['standard', 'weights', 'literal', 'nested', 'writes', 'writes-only'];
const READ_MIXES = ['standard', 'weights', 'literal'];
/** Write shares of the read mixes by default (BENCH_MIXED_WRITES sets them for all three). */
const READ_MIX_WRITES = { standard: [0, 2, 10], weights: [2], literal: [2] };
const EVERY_KIND_WRITES = 10;

const MIXES = list(process.env.BENCH_MIXES ?? MIX_NAMES.join(','));
const WRITES = process.env.BENCH_MIXED_WRITES ? list(process.env.BENCH_MIXED_WRITES).map(Number) : undefined;
const CACHES = list(process.env.BENCH_MIXED_CACHE ?? 'on,off');
const DBS = list(process.env.BENCH_MIXED_DBS ?? 'sqlite,postgres');
const ACCOUNTS = Number(process.env.BENCH_MIXED_ACCOUNTS ?? 40);
const EDITORS = Number(process.env.BENCH_MIXED_EDITORS ?? 10);
const SIGNED_IN = Number(process.env.BENCH_MIXED_SIGNED_IN ?? 0.4);
const BASELINE = process.env.BENCH_BASELINE ? resolve(process.env.BENCH_BASELINE) : undefined;
/** Seconds measured per run: 6 (not BENCH_DURATION's 8) so that the defaults fit in 25 minutes. */
const DURATION = Number(process.env.BENCH_MIXED_DURATION ?? process.env.BENCH_DURATION ?? 6);
const SEED = process.env.BENCH_SEED ? Number(process.env.BENCH_SEED) >>> 0 : Math.floor(Math.random() * 2 ** 31);

const P99_MAX_MS = 50;
/** The fixed-rate runs' rate, as a share of the reference's closed-loop rate of the same row (BENCH_MIXED_FIXED_RATE; 0: none). */
const FIXED_RATE = Number(process.env.BENCH_MIXED_FIXED_RATE ?? 0.5);
/** Connections of the nested query beside the mix (of LOAD_DEFAULTS.connections in all). */
const BESIDE_NESTED = 5;
const NESTED_QUERY = '{ users(limit: 100) { posts(limit: 10) { author { id name } } } }';
/** Issue 20's targets, Inkwell ÷ reference, on every mix. */
const target = (cache, writes) => (cache === 'off' ? 1.2 : { 0: 3, 2: 2, 10: 1.5 }[writes]);
const WRITES_ONLY_TARGET = 1;
const NESTED_TARGET = 1;
const BACKENDS_TARGET = 0.6;

const CACHE_LABEL = { on: 'response cache on', off: 'response cache off; entity caches on' };
const CACHE_ENV = { on: {}, off: { RESPONSE_CACHE_MB: '0' } };

/** `ctx` from bench/run.mjs ({ only, load, env, … }); returns table rows. */
export async function runMixed(ctx = {}) {
  const mixes = selectedMixes(ctx.only ?? []);
  if (mixes.length === 0) return [];
  for (const c of CACHES) if (!CACHE_LABEL[c]) throw new Error(`BENCH_MIXED_CACHE: unknown setting ${c} (on, off)`);
  const load = { ...LOAD_DEFAULTS, ...ctx.load, duration: DURATION };
  const scenarios = scenariosOf(mixes);
  const caches = [...new Set(scenarios.flatMap((s) => s.caches))].sort((a, b) => (a === 'on' ? -1 : b === 'on' ? 1 : 0));
  const builds = BASELINE ? ['baseline', 'current'] : ['current'];
  const instances = caches.flatMap((cache) => builds.map((build) => ({ key: `${build}-${cache}`, build, cache })));
  const weights = drawWeights(SEED);
  const seeds = process.env.BENCH_SEED ? seededRandom(SEED) : Math.random;
  const nextSeed = () => Math.floor(seeds() * 2 ** 31);
  estimate(scenarios, load);

  const rows = [];
  const backends = [];
  const cleanups = [];
  const baselineNotes = [];
  try {
    for (const name of DBS) {
      if (name === 'postgres' && missingServers()) {
        rows.push({ table: 'reference', scenario: 'mixes on PostgreSQL + Redis (skipped)', service: null, ceiling: null, notes: missingServers() });
        continue;
      }
      if (name !== 'sqlite' && name !== 'postgres') throw new Error(`BENCH_MIXED_DBS: unknown database ${name}`);
      log(`${name}: preparing the data (${instances.length + 1} copies)`);
      const backend = name === 'sqlite' ? await prepareSqlite(cleanups, instances) : await preparePostgres(cleanups, instances);
      backend.reference = pausable(await startReference({ databaseUrl: backend.copies.reference.url, issuer: ISSUER }));
      cleanups.push(() => backend.reference.stop());
      backend.inkwells = {};
      for (const instance of instances) {
        const copy = backend.copies[instance.key];
        const env = { ...CACHE_ENV[instance.cache], ...ctx.env, PUBLIC_URL: ISSUER, ...copy.env };
        const server = pausable(await startService({ dbFile: copy.file ?? 'unused', env, nodeArgs: ctx.nodeArgs, ...(instance.build === 'baseline' ? { root: BASELINE } : {}) }));
        cleanups.push(() => server.stop());
        backend.inkwells[instance.key] = server;
      }
      // Tokens come from the first current Inkwell; their sessions go into every other copy.
      const first = instances.find((i) => i.build === 'current');
      backend.signInServer = backend.inkwells[first.key];
      const signInTarget = backend.copies[first.key].target;
      const allTargets = [backend.copies.reference.target, ...instances.map((i) => backend.copies[i.key].target)];
      backend.tokens = tokenKeeper({
        accounts: backend.accounts,
        editors: backend.editors,
        target: signInTarget,
        mirrors: allTargets.filter((t) => t !== signInTarget),
      });
      const { tokens, writers } = await backend.tokens(backend.signInServer);
      const sides = [...instances]
        .sort((a, b) => (a.build === b.build ? 0 : a.build === 'current' ? -1 : 1))
        .map((i) => ({ name: `${i.build} Inkwell (${CACHE_LABEL[i.cache]})`, server: backend.inkwells[i.key], baseline: i.build === 'baseline' }));
      const parity = await checkParity({
        sides,
        reference: backend.reference,
        data: backend.data,
        accounts: backend.accounts,
        tokens,
        writers,
        targets: { inkwell: signInTarget, all: allTargets },
      });
      log(`${name}: the reference and every Inkwell answer alike (${parity.count} requests compared)`);
      for (const difference of parity.baselineDifferences) log(`${name}: the baseline answers differently: ${difference}`);
      if (parity.baselineDifferences.length > 0) {
        baselineNotes.push(
          `${backend.label}: the baseline build answered ${parity.baselineDifferences.length} parity requests unlike the current build and the reference, e.g. ${parity.baselineDifferences[0].slice(0, 300)}`,
        );
      }
      backends.push(backend);
    }

    const common = { backends, load, nextSeed, weights, builds };
    for (const scenario of scenarios) {
      if (scenario.mix === 'nested') {
        for (const b of backends) rows.push(...(await measureNested({ ...common, b })));
        if (scenario.beside) for (const b of backends) rows.push(...(await measureBeside({ ...common, b })));
      } else rows.push(...(await measureTraffic({ ...common, scenario })));
    }
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
  const footnotes = footnotesFor(mixes, weights, baselineNotes);
  return rows.map((r) => (r.table === 'reference' ? { ...r, footnotes } : r));
}

/** The mixes to run: named on the command line (`mixed` = all but nested), else BENCH_MIXES. */
function selectedMixes(only) {
  for (const m of MIXES) if (!MIX_NAMES.includes(m)) throw new Error(`BENCH_MIXES: unknown mix ${m} (${MIX_NAMES.join(', ')})`);
  const names = only.map((n) => n.toLowerCase());
  if (names.length === 0) return MIX_NAMES.filter((m) => MIXES.includes(m));
  const chosen = new Set(names.filter((n) => MIX_NAMES.includes(n)));
  if (names.includes('mixed')) for (const m of MIXES) if (m !== 'nested') chosen.add(m);
  return MIX_NAMES.filter((m) => chosen.has(m));
}

function scenariosOf(mixes) {
  const scenarios = [];
  for (const mix of mixes) {
    if (READ_MIXES.includes(mix)) for (const writes of WRITES ?? READ_MIX_WRITES[mix]) scenarios.push({ mix, writes, caches: CACHES });
    if (mix === 'writes') scenarios.push({ mix, writes: EVERY_KIND_WRITES, caches: CACHES });
    // Writes are not served from the response cache: by default writes-only runs with it on (as in production) only.
    if (mix === 'writes-only') scenarios.push({ mix, writes: 100, caches: process.env.BENCH_MIXED_CACHE || !CACHES.includes('on') ? CACHES : ['on'] });
    // The nested query runs against Inkwell without its response cache, whatever BENCH_MIXED_CACHE says.
    if (mix === 'nested') scenarios.push({ mix, caches: ['off'], beside: true });
  }
  return scenarios;
}

/** How long the defaults take: one measurement is warm-up + duration + ~2 s of quiet and idle waits. */
function estimate(scenarios, load) {
  const builds = BASELINE ? 2 : 1;
  const perRound = scenarios.reduce((n, s) => n + (s.mix === 'nested' ? 2 * (1 + builds) : 1 + s.caches.length * builds), 0);
  const dbs = DBS.filter((d) => d === 'sqlite' || !missingServers()).length;
  // The nested scenarios: the query alone and beside the mix, reference and Inkwell each.
  const fixedRate = FIXED_RATE > 0 ? scenarios.reduce((n, s) => n + (s.mix === 'nested' ? 4 : 1 + s.caches.length), 0) : 0;
  const seconds = (perRound * ROUNDS + fixedRate) * dbs * (load.warmup + load.duration + 2);
  log(`${perRound} measurements per round and database, ${ROUNDS} rounds, ${fixedRate} at a fixed rate, ${dbs} database(s): about ${Math.round(seconds / 60)} min (plus set-up)`);
}

/** Copies (files) of one seeded SQLite database: the reference's and each Inkwell's. */
async function prepareSqlite(cleanups, instances) {
  const db = await createBenchDatabase(SHAPE);
  cleanups.push(() => db.remove());
  const seeded = { kind: 'sqlite', file: db.dbFile };
  const { accounts, draftIds } = await prepareAccounts(seeded, { count: ACCOUNTS });
  const editors = await prepareEditors(seeded, { count: EDITORS, from: ACCOUNTS });
  const copies = {};
  for (const key of ['reference', ...instances.map((i) => i.key)]) {
    const file = join(db.dir, `${key}.db`);
    copySqliteDatabase(db.dbFile, file);
    copies[key] = { file, url: `file:${file}`, env: {}, target: { kind: 'sqlite', file } };
  }
  return { name: 'sqlite', label: 'SQLite', copies, data: dataOf(db, draftIds), accounts, editors };
}

/** Databases made from one seeded template: the reference's and each Inkwell's (each Inkwell with its own Redis key prefix). */
async function preparePostgres(cleanups, instances) {
  const postgres = await startPostgres();
  cleanups.push(() => postgres.stop());
  const redis = await startRedis();
  cleanups.push(() => redis.stop());
  const url = await postgres.createDatabase('inkwell_mixed');
  await (await startService({ dbFile: 'unused', env: { DATABASE_URL: url } })).stop(); // migrates the empty database
  const seeded = await insertUsersAndPosts(url, SHAPE);
  const template = { kind: 'postgres', url };
  const { accounts, draftIds } = await prepareAccounts(template, { count: ACCOUNTS });
  const editors = await prepareEditors(template, { count: EDITORS, from: ACCOUNTS });
  const copies = {};
  for (const key of ['reference', ...instances.map((i) => i.key)]) {
    const name = `inkwell_mixed_${key.replace(/-/g, '_')}`;
    await query(postgres.url, `create database ${name} template inkwell_mixed`);
    const copyUrl = url.replace(/\/inkwell_mixed$/, `/${name}`);
    copies[key] = {
      url: copyUrl,
      env: { DATABASE_URL: copyUrl, REDIS_URL: redis.url, REDIS_KEY_PREFIX: `bench-mixed-${key}:` },
      target: { kind: 'postgres', url: copyUrl },
    };
  }
  return { name: 'postgres', label: 'PostgreSQL + Redis', copies, data: dataOf(seeded, draftIds), accounts, editors };
}

/** Reads may hit drafts (null for most callers); writes go to published posts. */
function dataOf({ userIds, postIds }, draftIds) {
  return { userIds, postIds: [...draftIds, ...postIds], writablePostIds: postIds, draftIds };
}

function mixLabel({ mix, writes }) {
  if (mix === 'standard') return `standard, ${writes} % writes`;
  if (mix === 'weights') return `weights (seed ${SEED}), ${writes} % writes`;
  if (mix === 'literal') return `literal ids, ${writes} % writes`;
  if (mix === 'writes') return `writes: ${writes} % of every kind`;
  return `writes-only: ${ACCOUNTS} users + ${EDITORS} editors`;
}

/**
 * Inkwell instances of one round in measuring order: per cache setting, the baseline
 * build and the current one; both orders reversed every other round, so that the
 * machine's drift within a round favours neither build nor cache setting.
 */
function inkwellOrder(caches, builds, round) {
  const flip = (list) => (round % 2 === 0 ? list : [...list].reverse());
  return flip(caches).flatMap((cache) => flip(builds).map((build) => ({ key: `${build}-${cache}`, build, cache })));
}

/**
 * One run against one server, the others paused (../lib/alone.mjs), after the machine is
 * quiet; waits until the server is idle again.
 */
function measureOne(name, server, run) {
  return alone(server, async () => {
    await waitForQuiet(quiet(name));
    const result = await run(server);
    await waitForIdle(server.child.pid);
    return result;
  });
}

/** The traffic of one scenario against backend `b`, with fresh tokens. */
async function trafficOf(b, { scenario, load, weights, seed }) {
  const { tokens, writers } = await b.tokens(b.signInServer);
  return {
    ...load,
    data: b.data,
    tokens,
    writers,
    kind: scenario.mix,
    weights: scenario.mix === 'weights' ? weights : undefined,
    writeShare: scenario.writes / 100,
    signedInShare: SIGNED_IN,
    seed,
  };
}

/** Rounds of (reference, then each Inkwell) per backend; one row per backend and cache setting, plus PostgreSQL ÷ SQLite, plus the fixed-rate rows. */
async function measureTraffic({ backends, scenario, load, nextSeed, weights, builds }) {
  const name = mixLabel(scenario);
  const rounds = [];
  const before = await Promise.all(backends.map((b) => sizesOf(b)));
  for (let round = 0; round < ROUNDS; round++) {
    const seed = nextSeed();
    const results = {};
    for (const b of backends) {
      const traffic = await trafficOf(b, { scenario, load, weights, seed });
      const order = inkwellOrder(scenario.caches, builds, round);
      log(`${name} — ${b.label}: round ${round + 1}/${ROUNDS}, reference then ${order.map((i) => i.key).join(', ')}`);
      const run = (server) => runTraffic({ ...traffic, url: server.graphqlUrl, serverPid: server.child.pid });
      const r = { reference: await measureOne(name, b.reference, run) };
      for (const i of order) r[i.key] = await measureOne(name, b.inkwells[i.key], run);
      log(`${name} — ${b.label}: ${Object.entries(r).map(([k, x]) => `${k} ${Math.round(x.rps)} req/s`).join(', ')}`);
      results[b.name] = r;
    }
    rounds.push(results);
  }
  const after = await Promise.all(backends.map((b) => sizesOf(b)));
  const rows = [];
  for (const cache of scenario.caches) {
    const label = `${name}, ${CACHE_LABEL[cache]}`;
    const targetOf = scenario.mix === 'writes-only' ? WRITES_ONLY_TARGET : target(cache, scenario.writes);
    for (const [i, b] of backends.entries()) {
      const perRound = rounds.map((r) => ({ service: r[b.name][`current-${cache}`], ceiling: r[b.name].reference, base: r[b.name][`baseline-${cache}`] }));
      const measured = row({ table: 'reference', scenario: `${label} — ${b.label}`, rounds: perRound, target: targetOf, sides: ['Inkwell', 'reference'] });
      rows.push({ ...measured, notes: [measured.notes, growthNote(before[i], after[i], `current-${cache}`)].filter(Boolean).join('; ') });
    }
    if (backends.length === 2) {
      const pairs = rounds.map((r) => ({ service: r.postgres[`current-${cache}`], ceiling: r.sqlite[`current-${cache}`] }));
      rows.push(row({ table: 'backends', scenario: `${label} — Inkwell`, rounds: pairs, target: BACKENDS_TARGET, sides: ['PostgreSQL', 'SQLite'] }));
    }
  }
  if (FIXED_RATE > 0) {
    for (const b of backends) {
      const rate = fixedRateOf(rounds, (r) => r[b.name].reference.rps);
      rows.push(...(await measureFixedRate({ b, scenario, load, weights, seed: nextSeed(), rate })));
    }
  }
  return rows;
}

/** Rows in each copy of backend `b` (reference and every Inkwell), by copy key. */
async function sizesOf(b) {
  const sizes = {};
  for (const [key, copy] of Object.entries(b.copies)) sizes[key] = await rowCounts(copy.target);
  return sizes;
}

/**
 * How the reference's copy and the Inkwell's grew over a scenario's closed-loop rounds: in
 * a closed loop the quicker server sends more writes, so its copy grows faster, and every
 * later scenario reads and writes larger tables there (bench/README.md).
 */
function growthNote(before, after, key) {
  const grown = (k) => `reactions ${before[k].reactions.toLocaleString('en-US')} → ${after[k].reactions.toLocaleString('en-US')}, posts ${before[k].posts.toLocaleString('en-US')} → ${after[k].posts.toLocaleString('en-US')}`;
  const same = (k) => after[k].reactions === before[k].reactions && after[k].posts === before[k].posts;
  if (same(key) && same('reference')) return undefined;
  return `data over the rounds: Inkwell's copy ${grown(key)}; the reference's ${grown('reference')}`;
}

/**
 * Latency below saturation: the reference and each current Inkwell sent the scenario's
 * requests on a schedule, at `rate` (FIXED_RATE of the reference's closed-loop rate in
 * this run), open loop (./open-loop.mjs). One row per cache setting, p99 against P99_MAX_MS.
 */
async function measureFixedRate({ b, scenario, load, weights, seed, rate }) {
  const name = `${mixLabel(scenario)} at ${rate.toLocaleString('en-US')} req/s`;
  const traffic = await trafficOf(b, { scenario, load, weights, seed });
  const run = probed(load, (server) => runTraffic({ ...traffic, rate, url: server.graphqlUrl, serverPid: server.child.pid }));
  log(`${name} — ${b.label}: fixed rate, reference then ${scenario.caches.join(', ')}`);
  const reference = await measureOne(name, b.reference, run);
  const rows = [];
  for (const cache of scenario.caches) {
    const service = await measureOne(name, b.inkwells[`current-${cache}`], run);
    rows.push(fixedRateRow(`${name}, ${CACHE_LABEL[cache]} — ${b.label}`, service, reference));
  }
  return rows;
}

/**
 * `run` with the disk probed meanwhile (../lib/disk-probe.mjs): its result gains `disk`. The
 * line logged first says which process is measured from then on, warm-up included (read by
 * bench/diagnostics/gc-overlap.mjs).
 */
const probed = (load, run) => async (server) => {
  log(`fixed rate: pid ${server.child.pid} measured from now (${load.warmup} s warm-up, then ${load.duration} s)`);
  const probe = startDiskProbe();
  let result;
  try {
    result = await run(server);
  } finally {
    const disk = await probe.stop();
    if (result) result.disk = disk;
  }
  return result;
};

/** A row of the fixed-rate table: p99 against P99_MAX_MS, and what else went wrong. */
function fixedRateRow(scenario, service, reference, notes = []) {
  const problems = [...problemsOf('Inkwell', service), ...problemsOf('reference', reference)];
  const apart = (r) => `reads ${r.readsP99 ?? '–'} ms, writes ${r.writesP99} ms`;
  // Where the tail is, when there are writes: a synced commit waits for the disk.
  if (service.writesP99 !== undefined) notes = [...notes, `p99 of Inkwell's ${apart(service)}; of the reference's ${apart(reference)}`];
  if (service.disk && reference.disk) notes = [...notes, `disk during the runs (warm-up included): Inkwell's ${describeStalls(service.disk)}, the reference's ${describeStalls(reference.disk)}`];
  return {
    table: 'fixedRate',
    scenario,
    service,
    ceiling: reference,
    p99Max: P99_MAX_MS,
    ...(problems.length > 0 ? { pass: false } : {}),
    notes: [
      ...notes,
      `Inkwell p90 ${service.p90} ms, max ${service.max} ms; reference p90 ${reference.p90} ms, max ${reference.max} ms`,
      `late (the generator's own lag) p99 ${service.lateP99}/${reference.lateP99} ms, max ${service.lateMax}/${reference.lateMax} ms`,
      `over ${SLOW_MS} ms, by when due: Inkwell's ${describeBursts(service.bursts)}; the reference's ${describeBursts(reference.bursts)}`,
      ...new Set(problems),
    ].join('; '),
  };
}

/**
 * Where in time the requests over SLOW_MS were due (./open-loop.mjs, `bursts`): all in one
 * window is one stall; spread over many, a queue that formed again and again.
 */
function describeBursts(bursts = []) {
  if (bursts.length === 0) return 'none';
  const count = bursts.reduce((sum, b) => sum + b.count, 0);
  const worst = bursts.reduce((a, b) => (b.count > a.count ? b : a));
  return `${count} in ${bursts.length} of the ${BURST_WINDOW_MS} ms windows, at most ${worst.count} in one (at ${worst.at} s)`;
}

/** FIXED_RATE of the reference's median closed-loop rate over `rounds` (`pick` finds its result in a round). */
const fixedRateOf = (rounds, pick) => Math.max(1, Math.round(FIXED_RATE * median(rounds.map(pick))));

/** The nested query, one body, against each Inkwell without its response cache. */
async function measureNested({ b, load, builds }) {
  const name = `nested users(100) × posts(10) × author, ${CACHE_LABEL.off} — ${b.label}`;
  const body = JSON.stringify({ query: NESTED_QUERY });
  for (const build of builds) await sameAnswer({ inkwell: b.inkwells[`${build}-off`], reference: b.reference, body, what: `the nested query (${build})` });
  const expect = async (url) => (await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text());
  const run = async (server) => runLoad({ ...load, url: server.graphqlUrl, body, expectBody: await expect(server.graphqlUrl), serverPid: server.child.pid });
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    log(`${name}: round ${round + 1}/${ROUNDS}`);
    const r = { ceiling: await measureOne(name, b.reference, run) };
    for (const i of inkwellOrder(['off'], builds, round)) r[i.build === 'current' ? 'service' : 'base'] = await measureOne(name, b.inkwells[i.key], run);
    log(`${name}: Inkwell ${Math.round(r.service.rps)} req/s, reference ${Math.round(r.ceiling.rps)} req/s`);
    rounds.push(r);
  }
  const rows = [row({ table: 'reference', scenario: name, rounds, target: NESTED_TARGET, sides: ['Inkwell', 'reference'] })];
  if (FIXED_RATE > 0) {
    const rate = fixedRateOf(rounds, (r) => r.ceiling.rps);
    const at = `nested users(100) × posts(10) × author at ${rate} req/s, ${CACHE_LABEL.off} — ${b.label}`;
    const fixed = probed(load, (server) => runLoad({ ...load, rate, url: server.graphqlUrl, body, serverPid: server.child.pid }));
    log(`${at}: fixed rate, reference then Inkwell`);
    const reference = await measureOne(at, b.reference, fixed);
    rows.push(fixedRateRow(at, await measureOne(at, b.inkwells['current-off'], fixed), reference));
  }
  return rows;
}

/**
 * The standard read mix on all but BESIDE_NESTED connections while those send the
 * nested query, each implementation uncached. The row shows the mix: its rate as a ratio
 * and its p99 against the target; the notes give the nested query's rate and p99 beside
 * it. Server CPU is not split between the two.
 */
async function measureBeside({ b, load, builds, nextSeed }) {
  const name = `standard 0 % writes beside the nested query on ${BESIDE_NESTED} connections, ${CACHE_LABEL.off} — ${b.label}`;
  const body = JSON.stringify({ query: NESTED_QUERY });
  const connections = load.connections - BESIDE_NESTED;
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const { tokens } = await b.tokens(b.signInServer);
    const seed = nextSeed();
    const both = async (server) => {
      const [mix, nested] = await Promise.all([
        runTraffic({ ...load, connections, data: b.data, tokens, signedInShare: SIGNED_IN, seed, url: server.graphqlUrl }),
        runLoad({ ...load, connections: BESIDE_NESTED, url: server.graphqlUrl, body }),
      ]);
      return { ...mix, nested };
    };
    log(`${name}: round ${round + 1}/${ROUNDS}`);
    const r = { ceiling: await measureOne(name, b.reference, both) };
    for (const i of inkwellOrder(['off'], builds, round)) r[i.build === 'current' ? 'service' : 'base'] = await measureOne(name, b.inkwells[i.key], both);
    log(`${name}: Inkwell ${Math.round(r.service.rps)} req/s (p99 ${r.service.p99} ms), reference ${Math.round(r.ceiling.rps)} req/s (p99 ${r.ceiling.p99} ms)`);
    rounds.push(r);
  }
  const result = row({ table: 'reference', scenario: name, rounds, target: undefined, sides: ['Inkwell', 'reference'] });
  const shown = rounds.find((r) => r.service === result.service);
  const nestedNote = (who, r) => `${who} nested ${Math.round(r.nested.rps)} req/s, p50 ${r.nested.p50} ms, p99 ${r.nested.p99} ms`;
  const nestedProblems = (r) => [...problemsOf('Inkwell nested', r.service.nested), ...problemsOf('reference nested', r.ceiling.nested)];
  const problems = rounds.flatMap(nestedProblems);
  const rows = [
    {
      ...result,
      ...(problems.length > 0 ? { pass: false } : {}),
      notes: [nestedNote('Inkwell', shown.service), nestedNote('reference', shown.ceiling), ...new Set(problems), result.notes].filter(Boolean).join('; '),
    },
  ];
  if (FIXED_RATE > 0) {
    // Each half at FIXED_RATE of the reference's rate for it: the mix and the nested query.
    const mixRate = fixedRateOf(rounds, (r) => r.ceiling.rps);
    const nestedRate = fixedRateOf(rounds, (r) => r.ceiling.nested.rps);
    const at = `standard 0 % writes at ${mixRate.toLocaleString('en-US')} req/s beside the nested query at ${nestedRate} req/s, ${CACHE_LABEL.off} — ${b.label}`;
    const { tokens } = await b.tokens(b.signInServer);
    const seed = nextSeed();
    const both = probed(load, async (server) => {
      const [mix, nested] = await Promise.all([
        runTraffic({ ...load, rate: mixRate, data: b.data, tokens, signedInShare: SIGNED_IN, seed, url: server.graphqlUrl }),
        runLoad({ ...load, rate: nestedRate, url: server.graphqlUrl, body }),
      ]);
      return { ...mix, nested };
    });
    log(`${at}: fixed rate, reference then Inkwell`);
    const reference = await measureOne(at, b.reference, both);
    const service = await measureOne(at, b.inkwells['current-off'], both);
    const r = { service, ceiling: reference };
    rows.push(fixedRateRow(at, service, reference, [nestedNote('Inkwell', service), nestedNote('reference', reference), ...new Set(nestedProblems(r))]));
  }
  return rows;
}

/** One row from the rounds (bench/lib/rounds.mjs); rows against the reference also check p99. */
const row = (args) => roundsRow({ ...args, p99Max: args.table === 'reference' ? P99_MAX_MS : undefined });

const percent = (x) => `${Math.round(x * 100)} %`;

/** What the labels mean, under the table. */
function footnotesFor(mixes, weights, baselineNotes) {
  const shares = (w) => READ_SHAPES.map((s) => `${s} ${percent(readShares(w, SIGNED_IN)[s])}`).join(', ');
  const notes = [
    `"${CACHE_LABEL.off}": RESPONSE_CACHE_MB=0 turns off Inkwell's whole-response cache only. Its other caches have no setting and are on in every row: ` +
      'the post(id) cache (row and like count; in process on SQLite, in Redis on PostgreSQL), shared reads (concurrent requests share one statement per turn), ' +
      'the session memo (SQLite only), the verified-token memo and the parsed-document cache (64 MiB; an operation compiled on its tenth execution). ' +
      "The reference has Mercurius's compiled-document cache (1,024) and per-request DataLoaders only; it verifies every token and reads every session. " +
      `On PostgreSQL each has ${REFERENCE_POOL_SIZE} connections: Inkwell two pools of ${REFERENCE_POOL_SIZE / 2} (reads; writes and transactions), the reference one pool.`,
    'Each server is measured alone: every other server of the run is paused (SIGSTOP) from the quiet wait before its run until it is idle after it.',
    `Reads (${percent(1 - SIGNED_IN)} anonymous over post, user, posts; ${percent(SIGNED_IN)} signed in over all five): standard ${shares(undefined)}.`,
  ];
  if (mixes.includes('weights')) notes.push(`weights (seed ${SEED}, BENCH_SEED=${SEED} repeats it): ${shares(weights)}.`);
  if (mixes.includes('literal')) notes.push('literal ids: the same shapes with every id and argument written into the document, no variables (about 2,200 distinct read documents, and a new one per write).');
  if (mixes.includes('writes') || mixes.includes('writes-only')) {
    const kinds = Object.entries(WRITE_KINDS).map(([k, d]) => `${k} ${percent(d.share)}`).join(', ');
    notes.push(
      `writes of every kind: ${kinds}; addReaction of 12 types (like 1 in 12); half answer \`{ id }\`, half a richer selection; ` +
        `users (${ACCOUNTS}) react and update themselves, editors (${EDITORS}) create posts and update their own. writes-only: those writes alone. ` +
        'The standard mixes\' writes are addReaction (like 1 in 4) answering `{ id type post { id likes } }`.',
    );
  }
  if (BASELINE) {
    notes.push(`baseline build: ${BASELINE} (${commitOf(BASELINE)}), measured in the same rounds on its own copy of the data; current ÷ baseline: medians of the rounds' ratios (µs/req below 1× is cheaper).`);
    notes.push(...baselineNotes);
  }
  return notes;
}

function commitOf(dir) {
  try {
    return execFileSync('git', ['-C', dir, 'log', '-1', '--format=%h %s'], { encoding: 'utf8' }).trim().slice(0, 80);
  } catch {
    return 'not a git checkout';
  }
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
  // Flags for each Inkwell's node that NODE_OPTIONS refuses (V8's GC settings, say); a diagnostic, as --env is.
  const nodeArgs = args.filter((a) => a.startsWith('--node-arg=')).map((a) => a.slice('--node-arg='.length));
  runMixed({ only: args.filter((a) => !a.startsWith('--')), env, nodeArgs }).then(
    (rows) => console.log(`\n${formatTables(rows)}`),
    (error) => {
      console.error(`[bench] mixed crashed: ${error?.stack ?? error}`);
      process.exit(1);
    },
  );
}
