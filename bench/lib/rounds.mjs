/**
 * Rows of interleaved rounds (bench/mixed/, bench/hits/): the round with the median ratio
 * shown, every round's ratio in the notes (docs/decisions.md, "Bench rounds").
 */

/** The median (of an even count, the mean of the middle two). */
export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** The value at quantile `q` (0–1) of an ascending list; NaN for an empty one. */
export function quantile(sorted, q) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/**
 * The round with the median ratio (req/s and µs/req columns, notes); any wrong answer
 * makes the row fail. `rounds`: one { service, ceiling, base? } per round; `sides`: what
 * service and ceiling are, for the notes; `p99Max` adds the p99 cell. With a baseline
 * build: its req/s and µs/req from that round, and current ÷ baseline as the median of
 * the rounds' ratios (all rounds in the notes).
 */
export function roundsRow({ table, scenario, rounds, target, sides, p99Max }) {
  const withRatio = rounds.map((r) => ({ ...r, ratio: r.service.rps / r.ceiling.rps }));
  const shown = [...withRatio].sort((a, b) => a.ratio - b.ratio)[Math.floor(withRatio.length / 2)];
  const problems = withRatio.flatMap((r) => [
    ...problemsOf(sides[0], r.service),
    ...problemsOf(sides[1], r.ceiling),
    ...(r.base ? problemsOf('baseline', r.base) : []),
  ]);
  const notes = [];
  if (shown.service.serverCpuUsPerReq && shown.ceiling.serverCpuUsPerReq) {
    notes.push(`CPU ratio ${(shown.ceiling.serverCpuUsPerReq / shown.service.serverCpuUsPerReq).toFixed(2)}× (${sides[1]} µs ÷ ${sides[0]} µs)`);
  }
  notes.push(`gen ${pct(shown.service.generatorCpu)}/${pct(shown.ceiling.generatorCpu)}`, `other ${pct(shown.service.otherCpu)}/${pct(shown.ceiling.otherCpu)}`);
  notes.push(...[...new Set(problems)].slice(0, 4));
  if (withRatio.length > 1) notes.push(`rounds ${withRatio.map((r) => `${r.ratio.toFixed(2)}×`).join(', ')} (median shown)`);
  let baseRatio;
  if (withRatio.every((r) => r.base)) {
    const perRound = withRatio.map((r) => ({
      rps: r.service.rps / r.base.rps,
      cpu: r.service.serverCpuUsPerReq && r.base.serverCpuUsPerReq ? r.service.serverCpuUsPerReq / r.base.serverCpuUsPerReq : NaN,
    }));
    baseRatio = { rps: median(perRound.map((x) => x.rps)), cpu: median(perRound.map((x) => x.cpu)) };
    if (perRound.length > 1) notes.push(`current ÷ baseline rounds ${perRound.map((x) => `${x.rps.toFixed(2)}× req/s, ${x.cpu.toFixed(2)}× µs`).join('; ')}`);
    notes.push(`baseline p99 ${shown.base.p99} ms`);
  }
  return {
    table,
    scenario,
    service: shown.service,
    ceiling: shown.ceiling,
    ratio: shown.ratio,
    target,
    ...(problems.length > 0 ? { pass: false } : {}),
    ...(p99Max === undefined ? {} : { p99Max }),
    ...(baseRatio ? { base: shown.base, baseRatio } : {}),
    notes: notes.filter(Boolean).join('; '),
  };
}

const pct = (x) => (x === undefined ? '?' : `${Math.round(x * 100)}%`);

/** Wrong answers anywhere in a run (warm-up included). */
export function problemsOf(who, r) {
  const out = [];
  for (const [phase, x] of [['', r], ['warm-up ', r.warmup]]) {
    if (!x) continue;
    const bad = x.non2xx + x.errors + x.timeouts;
    if (bad > 0) out.push(`${who} ${phase}${x.non2xx} non-2xx, ${x.errors} errors, ${x.timeouts} timeouts`);
    if (x.badBodies) out.push(`${who} ${phase}${x.badBodies} wrong answers, e.g. ${String(x.firstBad).slice(0, 200)}`);
    if (x.mismatches) out.push(`${who} ${phase}${x.mismatches} wrong bodies`);
  }
  return out;
}
