/**
 * Mixed traffic against one GraphQL URL for a while — the reusable part of issue 11's
 * bench (the mixed scenarios use it; a soak test can run it for ten minutes). The
 * generator runs in its own process (bench/mixed/traffic-worker.mjs); CPU accounting
 * and clean-up come from bench/lib/load.mjs.
 */
import { fileURLToPath } from 'node:url';
import { runLoad } from '../lib/load.mjs';

const WORKER = fileURLToPath(new URL('./traffic-worker.mjs', import.meta.url));

/**
 * url: the GraphQL endpoint. data: { postIds, writablePostIds, userIds }. tokens: access
 * tokens for the signed-in share (they live 15 minutes: get fresh ones for longer runs).
 * writeShare (0–1, default 0), signedInShare (of reads, default 0.4), connections (50),
 * duration and warmup in s (BENCH_DURATION / BENCH_WARMUP), serverPid (CPU accounting),
 * seed (random per run by default), checkAll (check every measured response fully);
 * kind ('standard', 'weights', 'literal', 'writes', 'writes-only'), weights and writers:
 * see createMix in bench/mixed/mix.mjs.
 *
 * Resolves with { rps, p50, p90, p99, mean, max, total, non2xx, errors, timeouts,
 * badBodies, firstBad, shapes, generatorCpu, serverCpu?, serverCpuUsPerReq?, otherCpu?,
 * warmup: { …the same for the warm-up, where every response is checked } }.
 */
export function runTraffic({ url, data, tokens, writers, kind = 'standard', weights, writeKinds, writeShare = 0, signedInShare = 0.4, seed, checkAll = false, ...load }) {
  const mix = { data, tokens, writers, kind, weights, writeKinds, writeShare, signedInShare };
  return runLoad({ ...load, url, script: WORKER, mix, seed, checkAll });
}
