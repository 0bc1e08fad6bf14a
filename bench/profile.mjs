/**
 * Where the service spends its time: for each chosen scenario, a fresh service under
 * `node --cpu-prof`, loaded like `npm run bench` does, then stopped (SIGTERM, so V8
 * writes the profile) and summarised. Not part of `npm run bench`.
 *
 *   npm run build && node bench/profile.mjs [Q0 Q1 Q2 Q3] [--top=40] [--keep] [--env=NAME=VALUE ...]
 *
 * Summaries go to bench/results/profile-<Q>.txt; with --keep the .cpuprofile files
 * are copied there too (open them in Chrome DevTools or speedscope).
 */
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installCleanup } from './lib/children.mjs';
import { waitForQuiet } from './lib/cpu.mjs';
import { formatSummary, loadProfile, summarise } from './lib/cpuprofile.mjs';
import { runLoad } from './lib/load.mjs';
import { coreScenarios } from './lib/scenarios.mjs';
import { createBenchDatabase } from './lib/seed.mjs';
import { postGraphQL, startService } from './lib/service.mjs';

async function main() {
  installCleanup();
  const args = process.argv.slice(2);
  const names = args.filter((a) => !a.startsWith('--'));
  const top = Number(args.find((a) => a.startsWith('--top='))?.slice(6) ?? 30);
  const keep = args.includes('--keep');
  const env = {};
  for (const arg of args.filter((a) => a.startsWith('--env='))) {
    const [name, ...value] = arg.slice('--env='.length).split('=');
    env[name] = value.join('=');
  }
  const suffix = Object.entries(env).map(([k, v]) => `-${k}=${v}`).join('');
  const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });

  const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });
  try {
    for (const scenario of coreScenarios(db)) {
      if (names.length > 0 && !names.includes(scenario.name)) continue;
      const profDir = join(db.dir, `prof-${scenario.name}`);
      const service = await startService({ dbFile: db.dbFile, env, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] });
      let result;
      try {
        const body = JSON.stringify({ query: scenario.query });
        await postGraphQL(service.graphqlUrl, body);
        await waitForQuiet({ log: (m) => console.error(`[profile] ${m}`) });
        console.error(`[profile] ${scenario.name}: loading the profiled service`);
        result = await runLoad({ url: service.graphqlUrl, body, serverPid: service.child.pid });
      } finally {
        await service.stop();
      }
      const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
      if (!file) throw new Error(`${scenario.name}: no .cpuprofile written in ${profDir}`);
      const text = [
        `# ${scenario.label}${suffix ? ` (${suffix.slice(1)})` : ''} — profiled service (numbers are lower than unprofiled)`,
        `${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms; ` +
          `service ${Math.round(result.serverCpuUsPerReq ?? NaN)} µs CPU/req; other load on the machine ${Math.round((result.otherCpu ?? NaN) * 100)}% of a core ` +
          '(warm-up included in the profile)',
        '',
        formatSummary(summarise(loadProfile(join(profDir, file))), { top }),
      ].join('\n');
      console.log(`\n${text}\n`);
      writeFileSync(join(resultsDir, `profile-${scenario.name}${suffix}.txt`), `${text}\n`);
      if (keep) copyFileSync(join(profDir, file), join(resultsDir, `profile-${scenario.name}${suffix}.cpuprofile`));
    }
  } finally {
    db.remove();
  }
}

main().catch((error) => {
  console.error(`[profile] crashed: ${error?.stack ?? error}`);
  process.exit(1);
});
