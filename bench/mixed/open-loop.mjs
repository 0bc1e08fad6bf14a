/**
 * Open-loop load: requests sent on a fixed schedule (`rate` per second, evenly spaced)
 * whatever the server answers, each one's latency counted from the time it was due, not
 * from when a connection was free to send it (so a server that falls behind is charged for
 * the wait, as a client would see it). Closed-loop runs (autocannon's) measure a saturated
 * server, whose latency is connections ÷ rate by Little's law; this measures latency at a
 * load below saturation (bench/README.md, "Latency at a fixed rate"). node:http's client
 * with a pool of SOCKETS keep-alive connections, all opened before the schedule starts, as
 * a proxy or a client library keeps them: requests beyond them wait in the pool (counted,
 * as the wait is from the due time). Opened as needed instead, a burst of new connections
 * met libuv's one accept per event-loop iteration and waited up to 2 s for it, on both
 * servers: that measures connection set-up under load, not the requests.
 */
import http from 'node:http';
import { quantile } from '../lib/rounds.mjs';

const SOCKETS = 64;
/** How often due requests are sent: every tick sends all that came due since the last. */
const TICK_MS = 1;
/** Answers still missing this long after the last request was due count as timeouts. */
const DRAIN_MS = 10_000;

/**
 * `next()` gives { shape, body, headers }; `onResponse(shape, status, body)` sees each
 * answer. Resolves with { rps (answered per second), offered, total, p50, p90, p99, mean,
 * max, lateP99 and lateMax (how late requests left: the generator's own lag), non2xx,
 * errors, timeouts, shapes, bursts (when the requests over 50 ms were due), duration }
 * once every answer is in or DRAIN_MS have passed.
 */
export async function openLoop({ url, rate, duration, next, onResponse, byShape = false }) {
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: SOCKETS, maxFreeSockets: SOCKETS });
  await openSockets(target, agent);
  const latencies = [];
  /** [due ms since start, latency ms] of the requests over SLOW_MS: when the tail happened. */
  const slow = [];
  /** How late each request left, ms: the generator's own lag (its GC, the CPU it did not get). */
  const lateness = [];
  const shapes = {};
  /** With `byShape`: each shape's latencies. */
  const perShape = {};
  let sent = 0;
  let answered = 0;
  let non2xx = 0;
  let errors = 0;
  const count = Math.round(rate * duration);
  const interval = 1000 / rate;
  const start = performance.now();
  let allAnswered;
  const done = new Promise((resolve) => (allAnswered = resolve));

  const send = (dueAt) => {
    const { shape, body, headers } = next();
    shapes[shape] = (shapes[shape] ?? 0) + 1;
    let finished = false;
    const finish = (ok, status, text) => {
      if (finished) return; // a socket error after the answer was read
      finished = true;
      const latency = performance.now() - dueAt;
      latencies.push(latency);
      if (latency > SLOW_MS) slow.push([dueAt - start, latency]);
      if (byShape) (perShape[shape] ??= []).push(latency);
      if (!ok) errors++;
      else if (status < 200 || status > 299) non2xx++;
      if (ok) onResponse(shape, status, text);
      if (++answered === count) allAnswered();
    };
    const request = http.request(
      { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (response) => {
        const chunks = [];
        response.on('data', (chunk) => chunks.push(chunk));
        response.on('end', () => finish(true, response.statusCode, Buffer.concat(chunks).toString()));
        response.on('error', () => finish(false));
      },
    );
    request.on('error', () => finish(false));
    request.end(body);
  };

  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (sent < count && start + sent * interval <= now) {
        const dueAt = start + sent++ * interval;
        lateness.push(now - dueAt);
        send(dueAt);
      }
      if (sent < count) setTimeout(tick, TICK_MS);
      else resolve();
    };
    tick();
  });
  const lastDue = performance.now();
  await Promise.race([done, new Promise((resolve) => setTimeout(resolve, DRAIN_MS))]);
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();

  const sorted = latencies.sort((a, b) => a - b);
  const at = (q, list = sorted) => quantile(list, q);
  const late = lateness.sort((a, b) => a - b);
  return {
    rps: answered / Math.max(elapsed, duration),
    offered: rate,
    total: answered,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p99: round(at(0.99)),
    mean: round(sorted.reduce((sum, x) => sum + x, 0) / Math.max(1, sorted.length)),
    max: round(sorted.at(-1) ?? NaN),
    lateP99: round(at(0.99, late)),
    lateMax: round(late.at(-1) ?? NaN),
    non2xx,
    errors,
    timeouts: count - answered,
    shapes,
    ...(byShape ? { latencies: perShape } : {}),
    bursts: bursts(slow),
    duration: (lastDue - start) / 1000,
  };
}

const round = (ms) => Math.round(ms * 10) / 10;

/** Requests over this many ms are located in time (`bursts`). */
export const SLOW_MS = 50;
export const BURST_WINDOW_MS = 250;

/**
 * The slow requests by when they were due, in windows of BURST_WINDOW_MS:
 * [{ at (s from the start), count, max (ms) }]. One window holding them all is a stall;
 * many windows, a queue that formed again and again.
 */
function bursts(slow) {
  const windows = new Map();
  for (const [due, latency] of slow) {
    const key = Math.floor(due / BURST_WINDOW_MS);
    const w = windows.get(key) ?? { at: (key * BURST_WINDOW_MS) / 1000, count: 0, max: 0 };
    w.count++;
    w.max = Math.max(w.max, round(latency));
    windows.set(key, w);
  }
  return [...windows.values()].sort((a, b) => a.at - b.at);
}

/** Every socket of the pool, opened by as many requests at once (a `{ __typename }` each), then left idle in it. */
async function openSockets(target, agent) {
  const body = JSON.stringify({ query: '{ __typename }' });
  const one = () =>
    new Promise((resolve, reject) => {
      const request = http.request(
        { host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (response) => response.resume().on('end', resolve).on('error', reject),
      );
      request.on('error', reject);
      request.end(body);
    });
  await Promise.all(Array.from({ length: SOCKETS }, one));
}
