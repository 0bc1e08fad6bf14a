// A diagnostic, not a measurement: where a request's time went, from the service's own traces.
// An OTLP/HTTP (JSON) collector on 127.0.0.1:PORT that keeps, per trace, its `request`,
// `graphql.prepare` and `graphql.execute` spans; on SIGINT or SIGTERM it prints, by the
// request's duration, the mean time before preparing, between preparing and executing (the
// wait for an execution slice, src/graphql/operation/slices.ts, or the heavy line), in the
// execution, and after it. Tracing costs the service CPU, so load it below where it was:
//
//   node bench/diagnostics/latency-breakdown.mjs 4399 &
//   SEQUENCE=… node bench/diagnostics/sequence.mjs --env=OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4399 \
//     --env=OTEL_BSP_MAX_QUEUE_SIZE=200000 --env=OTEL_BSP_SCHEDULE_DELAY=300 --env=OTEL_BSP_MAX_EXPORT_BATCH_SIZE=4000
//   kill -INT %1
//
// (The batch processor's default queue of 2,048 spans drops most of them under load.)
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 4399);
const KEPT = new Set(['request', 'graphql.prepare', 'graphql.execute']);
/** traceId → { request, 'graphql.prepare', 'graphql.execute': [start ms, end ms] } */
const traces = new Map();

const ms = (nanos) => Number(BigInt(nanos) / 1000n) / 1000;

createServer((req, res) => {
  const chunks = [];
  req.on('data', (chunk) => chunks.push(chunk));
  req.on('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString());
      for (const resource of body.resourceSpans ?? []) {
        for (const scope of resource.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            if (!KEPT.has(span.name)) continue;
            let trace = traces.get(span.traceId);
            if (!trace) traces.set(span.traceId, (trace = {}));
            // The first of a name: an operation has one of each.
            trace[span.name] ??= [ms(span.startTimeUnixNano), ms(span.endTimeUnixNano)];
          }
        }
      }
    } catch (error) {
      console.error(`[latency-breakdown] an export it could not read: ${error.message}`);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
}).listen(port, '127.0.0.1', () => console.error(`[latency-breakdown] collecting on http://127.0.0.1:${port}`));

function report() {
  const bands = [
    [0, 5],
    [5, 25],
    [25, 50],
    [50, Infinity],
  ];
  const rows = [];
  for (const t of traces.values()) {
    const request = t.request;
    const prepare = t['graphql.prepare'];
    const execute = t['graphql.execute'];
    if (!request || !prepare || !execute) continue;
    rows.push([request[1] - request[0], prepare[0] - request[0], execute[0] - prepare[1], execute[1] - execute[0], request[1] - execute[1]]);
  }
  console.log(`requests with all three spans: ${rows.length} (of ${traces.size} traces)`);
  console.log('| request took | requests | mean ms | before preparing | preparing → executing | executing | after |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const [low, high] of bands) {
    const band = rows.filter(([took]) => took >= low && took < high);
    if (band.length === 0) continue;
    const mean = (i) => (band.reduce((sum, row) => sum + row[i], 0) / band.length).toFixed(1);
    console.log(`| ${low}–${high === Infinity ? '' : high} ms | ${band.length} | ${mean(0)} | ${mean(1)} | ${mean(2)} | ${mean(3)} | ${mean(4)} |`);
  }
  process.exit(0);
}
process.on('SIGINT', report);
process.on('SIGTERM', report);
