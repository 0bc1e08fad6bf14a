/**
 * In-process A/B of two builds (`npm run build && node bench/tracing/inject-ab.mjs
 * --base=<other checkout>`): both apps in one process on copies of one bench database,
 * driven through Fastify's `inject` in alternating batches, so the VM's drift hits both
 * alike; the median CPU µs per request of each. Tracing is off in both: this measures
 * what is always on (metrics, the request log controller, the call sites) against a
 * build without them. No network, so it shows the app's own cost only.
 */
import { copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createBenchDatabase } from '../lib/seed.mjs';
import { ROOT } from '../lib/service.mjs';

const base = process.argv.slice(2).find((a) => a.startsWith('--base='))?.slice('--base='.length);
if (!base) throw new Error('usage: node bench/tracing/inject-ab.mjs --base=<a built checkout>');
const BATCH = 2000;
const ROUNDS = 15;

const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });

async function build(root, name) {
  const file = join(db.dir, `${name}.db`);
  copyFileSync(db.dbFile, file);
  const { buildInkwell } = await import(join(root, 'dist/app.js'));
  const { loadConfig } = await import(join(root, 'dist/config.js'));
  const env = { NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(48), DATABASE_URL: `file:${file}`, LOG_LEVEL: 'warn' };
  const inkwell = await buildInkwell(loadConfig({ ...env, RESPONSE_CACHE_MB: '0', RATE_LIMIT_MAX: '1000000000', COST_LIMIT: '1000000000', SEED_DEMO_DATA: 'never' }));
  await inkwell.app.ready();
  return inkwell;
}

async function batch(app, body) {
  const start = process.cpuUsage();
  for (let k = 0; k < BATCH; k++) {
    const response = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: body });
    if (response.statusCode !== 200 || response.body.includes('"errors"')) throw new Error(response.body);
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / BATCH;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const apps = [
  { name: `baseline (${base})`, inkwell: await build(resolve(base), 'base') },
  { name: 'this build', inkwell: await build(ROOT, 'ours') },
];
try {
  console.log('| query | build | CPU µs/req (median) | min |\n| --- | --- | --- | --- |');
  for (const query of [`{ user(id: "${db.userIds[0]}") { id name } }`, '{ users(limit: 10) { id name posts(limit: 5) { id title } } }']) {
    const body = JSON.stringify({ query });
    const runs = apps.map(() => []);
    for (const app of apps) await batch(app.inkwell.app, body);
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? [1, 0] : [0, 1];
      for (const i of order) runs[i].push(await batch(apps[i].inkwell.app, body));
    }
    apps.forEach((app, i) => console.log(`| ${query.slice(0, 40)}… | ${app.name} | ${median(runs[i]).toFixed(1)} | ${Math.min(...runs[i]).toFixed(1)} |`));
  }
} finally {
  for (const app of apps) await app.inkwell.close();
  db.remove();
}
