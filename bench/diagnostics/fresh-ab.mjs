// Builds of Inkwell (or one build under different settings) compared on one repeated request,
// each variant a fresh process in every round. On some VMs a process keeps a speed of its own
// for its whole life (one build measured 27–36 µs a hit across processes, bench/results/hits.md,
// "On the Xeon VM"), so a comparison that starts each variant once measures the processes.
//
//   node bench/diagnostics/fresh-ab.mjs [VARIANT ...] [--rounds=8] [--query=DOCUMENT]
//
// A VARIANT is `ROOT` or `ROOT:NAME=VALUE,NAME=VALUE`: a built checkout (`.` for this one)
// and the environment it runs with. With none: `.` alone. The query defaults to `user(id)`
// (every request after the first a response-cache hit). Prints each variant's CPU µs a
// request per round and their median; rounds alternate the order of the variants.
import { resolve } from 'node:path';
import { installCleanup } from '../lib/children.mjs';
import { runLoad } from '../lib/load.mjs';
import { median } from '../lib/rounds.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { postGraphQL, startService } from '../lib/service.mjs';

installCleanup();
const args = process.argv.slice(2);
const option = (name, fallback) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const rounds = Number(option('rounds', 8));
const named = args.filter((a) => !a.startsWith('--'));
const variants = (named.length > 0 ? named : ['.']).map((text) => {
  const [root, settings = ''] = text.split(/:(.*)/s);
  const env = Object.fromEntries(settings.split(',').filter(Boolean).map((pair) => pair.split(/=(.*)/s).slice(0, 2)));
  return { label: text, root: resolve(root), env, usPerRequest: [] };
});

const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });
const body = JSON.stringify({ query: option('query', `{ user(id: "${db.userIds[0]}") { id name } }`) });
for (let round = 0; round < rounds; round++) {
  for (const variant of round % 2 === 0 ? variants : [...variants].reverse()) {
    const service = await startService({ dbFile: db.dbFile, env: variant.env, root: variant.root });
    try {
      await postGraphQL(service.graphqlUrl, body);
      const result = await runLoad({ url: service.graphqlUrl, body, serverPid: service.child.pid, duration: 5, warmup: 2 });
      variant.usPerRequest.push(result.serverCpuUsPerReq);
    } finally {
      await service.stop();
    }
  }
  console.error(`[fresh-ab] round ${round + 1}/${rounds}: ${variants.map((v) => `${v.label} ${v.usPerRequest.at(-1).toFixed(1)} µs`).join(', ')}`);
}
for (const v of variants) {
  console.log(`${v.label}: median ${median(v.usPerRequest).toFixed(1)} µs a request (rounds ${v.usPerRequest.map((x) => x.toFixed(1)).join(', ')})`);
}
process.exit(0);
