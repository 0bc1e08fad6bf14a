/**
 * The instrumentation call sites with tracing off, timed in-process: `withSpan` and
 * `traceExecute` (what every executed operation passes through twice: prepare, execute)
 * against calling the same function directly; and, for scale, what the always-on
 * metrics cost per request (one histogram observation and a cache outcome).
 * Nanoseconds per call, best of several batches (the VM drifts; the minimum is the
 * cost, the rest is noise).
 */
import { Metrics } from '../../dist/observability/metrics.js';
import { traceExecute, tracingEnabled, withSpan } from '../../dist/observability/tracing.js';

const CALLS = 5_000_000;
const BATCHES = 7;

function time(fn) {
  let best = Infinity;
  for (let batch = 0; batch < BATCHES; batch++) {
    const start = process.hrtime.bigint();
    fn();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / CALLS);
  }
  return best;
}

export function measureCallSites() {
  if (tracingEnabled()) throw new Error('micro-bench must run with tracing off');
  const operation = { operationName: 'Q', operationType: 'query', document: { definitions: [] } };
  const result = { data: { n: 1 } };
  let sink = 0;
  const work = (i) => (sink += i & 1);
  const direct = time(() => {
    for (let i = 0; i < CALLS; i++) work(i);
  });
  const span = time(() => {
    for (let i = 0; i < CALLS; i++) withSpan('graphql.prepare', () => work(i));
  });
  const execute = time(() => {
    for (let i = 0; i < CALLS; i++) traceExecute(operation, () => (work(i), result));
  });
  const metrics = new Metrics();
  const statuses = [200, 200, 200, 400];
  const observe = time(() => {
    for (let i = 0; i < CALLS; i++) {
      metrics.observeOperation({ transport: 'http', route: '/graphql', operationType: 'query', status: statuses[i & 3], seconds: 0.0002 });
      metrics.cacheOutcome(i & 1 ? 'hit' : 'miss');
    }
  });
  if (sink === 42) console.log('');
  return { directNs: direct, withSpanNs: span, traceExecuteNs: execute, metricsPerRequestNs: observe };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(measureCallSites());
