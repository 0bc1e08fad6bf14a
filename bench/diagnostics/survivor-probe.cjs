// A diagnostic loaded into a service under test (not part of any measurement): which
// allocations outlive the young generation. On SIGUSR2 it samples allocations for
// SURVIVOR_SECONDS (15 by default), leaving out every object a scavenge collected; then it
// runs a full collection (start the service with --expose-gc) and writes the sampled
// stacks to $PROBE_DIR/survivors-<pid>.heapprofile. What remains is what was still alive,
// or what was promoted and died in the old generation: the garbage that brings on full
// collections. Read it with bench/diagnostics/survivors.mjs.
//   SEQUENCE=standard:0@600 BENCH_DURATION=40 node bench/diagnostics/sequence.mjs --postgres \
//     --env=PROBE_DIR=/tmp --node-arg=--expose-gc --node-arg=--require=$PWD/bench/diagnostics/survivor-probe.cjs
//   then, some seconds into the step: kill -USR2 <the service's pid>
// docs/decisions.md, "Nothing per request lives until a full collection", says what it found.
const fs = require('node:fs');
const inspector = require('node:inspector');
const os = require('node:os');
const path = require('node:path');

const session = new inspector.Session();
session.connect();
const post = (method, params) => new Promise((resolve, reject) => session.post(method, params, (e, r) => (e ? reject(e) : resolve(r))));

process.on('SIGUSR2', async () => {
  await post('HeapProfiler.enable');
  await post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false });
  setTimeout(async () => {
    global.gc?.();
    const { profile } = await post('HeapProfiler.stopSampling');
    const file = path.join(process.env.PROBE_DIR || os.tmpdir(), `survivors-${process.pid}.heapprofile`);
    fs.writeFileSync(file, JSON.stringify(profile));
    process.stderr.write(`survivor-probe: ${file}\n`);
  }, Number(process.env.SURVIVOR_SECONDS || 15) * 1000);
});
