/**
 * `npm run bench` (after `npm run build`): Inkwell against a raw node:http ceiling.
 *
 *   node bench/run.mjs [Q0 Q1 Q2 Q3 mixed nested standard weights literal writes writes-only hits ...] [--no-optional] [--env=NAME=VALUE ...]
 *   BENCH_DURATION=10 BENCH_WARMUP=3 BENCH_CONNECTIONS=50 (defaults)
 *
 * Prints a markdown table and writes it to bench/results/latest.md. Exits non-zero only
 * when something crashed; a missed target is a "FAIL" cell in the table, not an exit code.
 * Optional scenario modules (see OPTIONAL below and bench/README.md) run when present.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { installCleanup } from './lib/children.mjs';
import { LOAD_DEFAULTS } from './lib/load.mjs';
import { measureScenario, ROUNDS } from './lib/scenario.mjs';
import { coreScenarios } from './lib/scenarios.mjs';
import { createBenchDatabase } from './lib/seed.mjs';
import { MAIN, startService } from './lib/service.mjs';
import { formatTables } from './lib/table.mjs';

/** [file under bench/, exported function]; each gets `ctx` and returns a row or rows. */
const OPTIONAL = [
  ['login/run.mjs', 'runLoginLoad'],
  ['fanout/run.mjs', 'runFanout'],
  ['postgres/run.mjs', 'runPostgres'],
  ['mixed/run.mjs', 'runMixed'],
  ['hits/run.mjs', 'runHits'],
];

const SHAPE = { users: 100, postsPerUser: 10 };

async function main() {
  installCleanup();
  const args = process.argv.slice(2);
  const only = args.filter((a) => !a.startsWith('--'));
  const withOptional = !args.includes('--no-optional');
  const env = envArgs(args);
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` first`);

  const rows = [];
  const failures = [];
  const db = await createBenchDatabase(SHAPE);
  let service;
  try {
    service = await startService({ dbFile: db.dbFile, env });
    for (const scenario of coreScenarios(db)) {
      if (only.length > 0 && !only.includes(scenario.name)) continue;
      log(`${scenario.name}: measuring ceiling then service, ${ROUNDS} rounds (${LOAD_DEFAULTS.warmup} s warm-up + ${LOAD_DEFAULTS.duration} s each)`);
      const row = await measureScenario({ service, scenario });
      log(`${scenario.name}: service ${Math.round(row.service.rps)} req/s, ceiling ${Math.round(row.ceiling.rps)} req/s`);
      rows.push(row);
    }

    if (withOptional) {
      const ctx = { service, db, shape: SHAPE, only, load: LOAD_DEFAULTS, env };
      for (const [file, name] of OPTIONAL) {
        const path = fileURLToPath(new URL(file, import.meta.url));
        if (!existsSync(path)) continue;
        log(`${file}: ${name}()`);
        try {
          const mod = await import(pathToFileURL(path).href);
          if (typeof mod[name] !== 'function') throw new Error(`${file} does not export ${name}()`);
          const result = await mod[name](ctx);
          rows.push(...(Array.isArray(result) ? result : result ? [result] : []));
        } catch (error) {
          failures.push(error);
          console.error(`${file}: ${error?.stack ?? error}`);
          rows.push({ scenario: `${file} (crashed)`, service: null, ceiling: null, notes: String(error?.message ?? error).slice(0, 200) });
        }
      }
    }
  } finally {
    await service?.stop();
    db.remove();
  }

  const report = formatReport(rows);
  console.log(`\n${report}`);
  const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(`${resultsDir}latest.md`, `${report}\n`);
  log('written to bench/results/latest.md');
  if (failures.length > 0) process.exitCode = 1;
}

function formatReport(rows) {
  const cpu = cpus();
  const { connections, pipelining, duration, warmup } = LOAD_DEFAULTS;
  return [
    `# Inkwell bench — ${new Date().toISOString()}`,
    '',
    `Node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}; SQLite, ${SHAPE.users} users × ${SHAPE.postsPerUser} posts; ` +
      `autocannon ${connections} connections, pipelining ${pipelining}, ${warmup} s warm-up + ${duration} s measured (the mixes: ${process.env.BENCH_MIXED_DURATION ?? process.env.BENCH_DURATION ?? 6} s), ` +
      'each from its own process. Ceiling: raw node:http answering the same bytes. Latencies in ms; req/s is the per-second average. ' +
      `Ratio rows: ${ROUNDS} rounds of ceiling-then-service (reference-then-Inkwell in the reference tables); the row shows the round with the median ratio.`,
    '',
    formatTables(rows),
  ].join('\n');
}

/** `--env=NAME=VALUE` flags: extra service configuration, e.g. `--env=RESPONSE_CACHE_MB=0`. */
function envArgs(args) {
  const env = {};
  for (const arg of args.filter((a) => a.startsWith('--env='))) {
    const [name, ...value] = arg.slice('--env='.length).split('=');
    env[name] = value.join('=');
  }
  return env;
}

function log(message) {
  console.error(`[bench] ${message}`);
}

main().catch((error) => {
  console.error(`[bench] crashed: ${error?.stack ?? error}`);
  process.exit(1);
});
