/**
 * The mixed-traffic load generator, in its own process (forked through bench/lib/load.mjs's
 * runLoad, same IPC protocol as bench/load.mjs). autocannon's setupRequest draws every
 * request from the seeded mix (bench/mixed/mix.mjs). The warm-up checks every response
 * (status 200, JSON without errors, shape-specific checks); the measured run only counts
 * bodies that contain "errors" (or every check, with `checkAll`), to cost the generator little.
 * With `rate`, the warm-up and the measured run are open-loop at that many requests per second
 * (./open-loop.mjs): the row measures its rate, not a recovery from 50 saturating connections
 * (bench/results/fixed-rate.md, "Thirteenth and fourteenth runs").
 */
import autocannon from 'autocannon';
import { quantile } from '../lib/rounds.mjs';
import { checkResponse, createMix, READ_SHAPES } from './mix.mjs';
import { openLoop } from './open-loop.mjs';

const JSON_HEADERS = { 'content-type': 'application/json' };

async function phase(opts, duration, seed, fullCheck) {
  const next = createMix({ ...opts.mix, seed });
  const url = new URL(opts.url);
  const headersFor = new Map();
  const headersOf = (token) => {
    let headers = headersFor.get(token);
    if (!headers) headersFor.set(token, (headers = { ...JSON_HEADERS, authorization: `Bearer ${token}` }));
    return headers;
  };
  const shapes = {};
  // With `latencyByShape`: each shape's latencies (ms), from the request's setup to its response.
  const latencies = opts.latencyByShape ? {} : undefined;
  const problems = { count: 0, first: undefined };
  const request = {
    method: 'POST',
    path: url.pathname,
    setupRequest: (req, context) => {
      const r = next();
      context.shape = r.shape;
      if (latencies) context.start = performance.now();
      shapes[r.shape] = (shapes[r.shape] ?? 0) + 1;
      // A fresh headers object: autocannon writes Content-Length into it.
      return { ...req, headers: { ...(r.token ? headersOf(r.token) : JSON_HEADERS) }, body: r.body };
    },
    onResponse: (status, body, context) => {
      if (latencies && context.start !== undefined) (latencies[context.shape] ??= []).push(performance.now() - context.start);
      const problem = fullCheck ? checkResponse(context.shape, status, body) : body.includes('"errors"') ? `errors: ${body.slice(0, 300)}` : undefined;
      if (problem === undefined) return;
      problems.count++;
      problems.first ??= `${context.shape}: ${problem}`;
    },
  };
  if (opts.rate) {
    const draw = () => {
      const r = next();
      return { shape: r.shape, body: r.body, headers: r.token ? headersOf(r.token) : JSON_HEADERS };
    };
    const check = (shape, status, body) => request.onResponse(status, body, { shape });
    const { latencies: byShape, ...result } = await openLoop({ url: opts.url, rate: opts.rate, duration, next: draw, onResponse: check, byShape: true });
    return { ...result, ...readsAndWrites(byShape), badBodies: problems.count, firstBad: problems.first, ...(latencies ? { latencyByShape: summarise(byShape) } : {}) };
  }
  const r = await autocannon({ url: url.origin, connections: opts.connections ?? 50, pipelining: 1, duration, requests: [request] });
  return {
    rps: r.requests.average,
    total: r.requests.total,
    p50: r.latency.p50,
    p90: r.latency.p90,
    p99: r.latency.p99,
    mean: r.latency.average,
    max: r.latency.max,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    badBodies: problems.count,
    firstBad: problems.first,
    shapes,
    ...(latencies ? { latencyByShape: summarise(latencies) } : {}),
    duration: r.duration,
  };
}

/** The p99 of the reads and of the writes apart (ms, undefined for none): where a row's tail is. */
function readsAndWrites(byShape) {
  const p99 = (lists) => {
    const sorted = lists.flat().sort((a, b) => a - b);
    return sorted.length === 0 ? undefined : Math.round(quantile(sorted, 0.99) * 10) / 10;
  };
  const lists = Object.entries(byShape);
  return { readsP99: p99(lists.filter(([s]) => READ_SHAPES.includes(s)).map(([, l]) => l)), writesP99: p99(lists.filter(([s]) => !READ_SHAPES.includes(s)).map(([, l]) => l)) };
}

/** { shape: "p50 3.1, p99 12.0 ms" }. */
function summarise(latencies) {
  const at = (sorted, q) => quantile(sorted, q).toFixed(1);
  return Object.fromEntries(
    Object.entries(latencies).map(([shape, list]) => {
      const sorted = list.sort((a, b) => a - b);
      return [shape, `p50 ${at(sorted, 0.5)}, p99 ${at(sorted, 0.99)} ms`];
    }),
  );
}

process.once('disconnect', () => process.exit(0));

process.once('message', async (opts) => {
  try {
    // Each phase its own seed: the same writes twice would only find stored reactions.
    const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 32);
    const warmup = opts.warmup > 0 ? await phase(opts, opts.warmup, seed, true) : null;
    process.send({ type: 'measuring' });
    const started = process.cpuUsage();
    const result = await phase(opts, opts.duration ?? 10, seed + 1, Boolean(opts.checkAll));
    const used = process.cpuUsage(started);
    const generatorCpu = (used.user + used.system) / 1000 / (result.duration * 1000);
    process.send({ type: 'result', result: { ...result, generatorCpu, warmup, mismatches: 0 } });
  } catch (error) {
    process.send({ type: 'error', message: String(error?.stack ?? error) });
  }
});
