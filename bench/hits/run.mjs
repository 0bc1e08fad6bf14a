/**
 * A response-cache hit against executions of the same query (issue 20, "hits cheaper
 * than executions"): anonymous `user(id) { id name }`, answered by
 *   - Inkwell with its response cache on: after the first request every one is a hit;
 *   - the same build with it off (RESPONSE_CACHE_MB=0; its entity caches stay on):
 *     parsed once, executed every time;
 *   - Mercurius + graphql-jit on in-memory data: the plain reference
 *     (bench/reference/server.mjs) with REFERENCE_DATA=memory, which reads the users
 *     into a Map at start and touches no database while measured;
 *   - the framework's floor (bench/fastify-floor.mjs): Fastify answering the hit's bytes
 *     with no GraphQL work, as a measure of what the hit costs above it (no target).
 * Each round starts all four afresh and loads them in turn, in an order reversed every
 * other round; a row shows the round with the median ratio, with each server's CPU µs
 * per request.
 *
 *   npm run build && node bench/hits/run.mjs       (also: node bench/run.mjs hits)
 */
import { fileURLToPath } from 'node:url';
import { startFastifyFloor } from '../lib/ceiling.mjs';
import { installCleanup } from '../lib/children.mjs';
import { waitForQuiet } from '../lib/cpu.mjs';
import { withoutCost } from '../lib/cost-report.mjs';
import { LOAD_DEFAULTS, runLoad } from '../lib/load.mjs';
import { roundsRow } from '../lib/rounds.mjs';
import { ROUNDS } from '../lib/scenario.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { postGraphQL, startService } from '../lib/service.mjs';
import { formatTables } from '../lib/table.mjs';
import { startReference } from '../reference/start.mjs';

const HIT_TARGET = 1.2;
const UNCACHED_TARGET = 1;

/** Rows for bench/run.mjs (scenario name `hits`); none when other scenarios were asked for. */
export async function runHits(ctx = {}) {
  const only = ctx.only ?? [];
  if (only.length > 0 && !only.includes('hits')) return [];
  const db = ctx.db ?? (await createBenchDatabase({ users: 100, postsPerUser: 10 }));
  const userId = db.userIds[0];
  const body = JSON.stringify({ query: `{ user(id: "${userId}") { id name } }` });
  const load = { ...LOAD_DEFAULTS, ...ctx.load };
  try {
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Fresh processes every round: on some VMs a process keeps a speed of its own for its
      // whole life (bench/results/hits.md, "On the Xeon VM"), which one start per run would measure.
      const { sides, answer } = await startSides(db, ctx.env, body, userId);
      try {
        const order = round % 2 === 0 ? ['hit', 'executed', 'memory', 'floor'] : ['floor', 'memory', 'executed', 'hit'];
        const results = {};
        for (const name of order) {
          await waitForQuiet({ log: (m) => log(m) });
          results[name] = await runLoad({ url: sides[name].graphqlUrl, body, expectBody: answer, serverPid: sides[name].child.pid, ...load });
        }
        log(`round ${round + 1}/${ROUNDS}: ${order.map((n) => `${n} ${Math.round(results[n].rps)} req/s, ${Math.round(results[n].serverCpuUsPerReq)} µs/req`).join('; ')}`);
        rounds.push(results);
      } finally {
        for (const server of Object.values(sides).reverse()) await server.stop();
      }
    }
    return [
      row('user(id) { id name }: Inkwell, a response-cache hit ÷ Mercurius + graphql-jit on in-memory data', rounds, 'memory', HIT_TARGET),
      row('user(id) { id name }: Inkwell, a response-cache hit ÷ Inkwell executing it (response cache off; entity caches on)', rounds, 'executed', UNCACHED_TARGET),
      row('user(id) { id name }: Inkwell, a response-cache hit ÷ Fastify answering its bytes with no GraphQL work (the floor; no target)', rounds, 'floor', undefined),
    ];
  } finally {
    if (!ctx.db) db.remove();
  }
}

/**
 * The four servers, started fresh, and the answer they all give (Inkwell's without its
 * cost report), checked again on every warm-up response.
 */
async function startSides(db, env, body, userId) {
  const started = [];
  const start = async (starting) => {
    const server = await starting;
    started.push(server);
    return server;
  };
  try {
    const hit = await start(startService({ dbFile: db.dbFile, env }));
    const executed = await start(startService({ dbFile: db.dbFile, env: { ...env, RESPONSE_CACHE_MB: '0' } }));
    const memory = await start(startReference({ databaseUrl: `file:${db.dbFile}`, issuer: hit.url, env: { REFERENCE_DATA: 'memory' } }));
    const first = await postGraphQL(hit.graphqlUrl, body);
    const floor = await start(startFastifyFloor({ bytes: first.bytes, contentType: first.contentType }));
    const sides = { hit, executed, memory, floor };
    const answers = await Promise.all(Object.values(sides).map(async (s) => withoutCost((await postGraphQL(s.graphqlUrl, body)).bytes.toString('utf8'))));
    if (!answers.every((a) => a === answers[0]) || !answers[0].includes(userId)) throw new Error(`hits: the servers answer differently: ${answers.join(' / ')}`);
    return { sides, answer: answers[0] };
  } catch (error) {
    for (const server of started.reverse()) await server.stop();
    throw error;
  }
}

/** Hit ÷ `other` per round (bench/lib/rounds.mjs): the median round, every ratio in the notes. */
function row(scenario, rounds, other, target) {
  return roundsRow({ table: 'hits', scenario, rounds: rounds.map((r) => ({ service: r.hit, ceiling: r[other] })), target, sides: ['hit', other] });
}

const log = (message) => console.error(`[bench] hits: ${message}`);

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  installCleanup();
  runHits()
    .then((rows) => console.log(`\n${formatTables(rows)}`))
    .catch((error) => {
      console.error(error);
      process.exitCode = 1;
    });
}
