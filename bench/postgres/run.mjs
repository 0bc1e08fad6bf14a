/**
 * The scale-out benches (issue 5), run by bench/run.mjs when this file exists:
 *
 * 1. Q1–Q3 against one instance on PostgreSQL + Redis (the scale-out configuration:
 *    every request also counts its rate limit in Redis, Q3's cache lives in Redis),
 *    each against the same raw node:http ceiling as the SQLite rows. Target: Q1 ≥ 0.5×.
 * 2. The two-instance fan-out (bench/fanout-cluster/run.mjs): subscribers split across
 *    two instances, reactions through one; delivery p99 against the same subscribers on
 *    one instance. Target: cross-instance p99 ≤ 2× single-instance.
 *
 *   npm run build && node bench/postgres/run.mjs [Q1 Q2 Q3 fanout-cluster]
 *
 * Needs Debian's postgresql and redis-server (`.ci/run` installs them); without them it
 * reports one skipped row instead of failing.
 */
import { pathToFileURL } from 'node:url';
import { installCleanup } from '../lib/children.mjs';
import { measureScenario } from '../lib/scenario.mjs';
import { coreScenarios } from '../lib/scenarios.mjs';
import { startService } from '../lib/service.mjs';
import { formatTable } from '../lib/table.mjs';
import { runFanoutCluster } from '../fanout-cluster/run.mjs';
import { insertUsersAndPosts } from './seed.mjs';
import { missingServers, startPostgres, startRedis } from './servers.mjs';

// Issue 5's targets on PostgreSQL + Redis; Q3 runs there without one (a diagnostic row).
const PG_TARGETS = { Q1: 0.5, Q2: 0.1 };
const SHAPE = { users: 100, postsPerUser: 10 };

/** `ctx` from bench/run.mjs ({ only, shape, … }); returns table rows. */
export async function runPostgres(ctx = {}) {
  const only = (ctx.only ?? []).map((name) => name.toLowerCase());
  const wants = (name) => only.length === 0 || only.includes(name.toLowerCase()) || only.includes('postgres');
  const scenarios = ['Q1', 'Q2', 'Q3'].filter(wants);
  const fanout = wants('fanout-cluster');
  if (scenarios.length === 0 && !fanout) return [];
  const missing = missingServers();
  if (missing) {
    log(`skipped: ${missing}`);
    return [{ scenario: 'PostgreSQL + Redis benches (skipped)', service: null, ceiling: null, notes: missing }];
  }

  const shape = ctx.shape ?? SHAPE;
  const rows = [];
  const postgres = await startPostgres();
  const redis = await startRedis();
  try {
    if (scenarios.length > 0) {
      const databaseUrl = await postgres.createDatabase('inkwell_bench');
      const env = { DATABASE_URL: databaseUrl, REDIS_URL: redis.url, REDIS_KEY_PREFIX: 'bench:' };
      const service = await startService({ dbFile: 'unused', env }); // migrates the empty database
      try {
        const data = await insertUsersAndPosts(databaseUrl, shape);
        for (const scenario of coreScenarios(data)) {
          if (!scenarios.includes(scenario.name)) continue;
          const pgScenario = {
            ...scenario,
            label: `${scenario.label ?? scenario.name} — PostgreSQL + Redis`,
            target: PG_TARGETS[scenario.name],
          };
          log(`${scenario.name} on PostgreSQL + Redis`);
          const row = await measureScenario({ service, scenario: pgScenario, load: ctx.load });
          log(`${scenario.name}: service ${Math.round(row.service.rps)} req/s, ceiling ${Math.round(row.ceiling.rps)} req/s`);
          rows.push(row);
        }
      } finally {
        await service.stop();
      }
    }
    if (fanout) rows.push(...(await runFanoutCluster({ postgres, redis })));
  } finally {
    await redis.stop();
    await postgres.stop();
  }
  return rows;
}

function log(message) {
  console.error(`[bench] postgres: ${message}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  installCleanup();
  runPostgres({ only: process.argv.slice(2) }).then(
    (rows) => console.log(`\n${formatTable(rows)}`),
    (error) => {
      console.error(`[bench] postgres crashed: ${error?.stack ?? error}`);
      process.exit(1);
    },
  );
}
