/**
 * One scenario measured against its ceiling: take the real response from the service,
 * serve those bytes from the raw node:http ceiling, then load the ceiling and the
 * service in turn, for several rounds (BENCH_ROUNDS, default 3).
 *
 * Why rounds: this machine is a shared VM whose speed drifts by ±20 % over tens of
 * seconds, for the ceiling as much as for the service. A ratio from two runs taken
 * minutes apart measures that drift as much as the code; each round pairs two adjacent
 * runs, and the row shows the round whose ratio is the median (all ratios are in the notes).
 */
import { startCeiling } from './ceiling.mjs';
import { waitForQuiet } from './cpu.mjs';
import { withoutCost } from './cost-report.mjs';
import { runLoad } from './load.mjs';
import { REQUEST_HEADERS, postGraphQL } from './service.mjs';

export const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3));

/**
 * scenario: { name, query, variables?, target?, headers?, check?(json) }
 * Optional hook `duringServiceLoad()` starts extra work before the service is loaded and
 * returns an async stop function (e.g. logins in flight); its result lands in row.extra.
 * With that hook there is one round (the extra work is the measurement).
 */
export async function measureScenario({ service, scenario, duringServiceLoad, load = {} }) {
  const body = JSON.stringify({ query: scenario.query, ...(scenario.variables ? { variables: scenario.variables } : {}) });
  const headers = { ...REQUEST_HEADERS, ...scenario.headers };

  // The first request also warms whatever the service caches; the second must match it.
  const first = await fetchChecked(service.graphqlUrl, body, scenario);
  const second = await fetchChecked(service.graphqlUrl, body, scenario);
  // Compared without the cost report, which changes from one request to the next.
  if (withoutCost(first.bytes.toString('utf8')) !== withoutCost(second.bytes.toString('utf8'))) {
    throw new Error(`${scenario.name}: two identical requests gave different bodies`);
  }

  const quiet = { log: (m) => console.error(`[bench] ${scenario.name}: ${m}`) };
  const ceiling = await startCeiling({ bytes: first.bytes, contentType: first.contentType });
  const rounds = [];
  let extra;
  try {
    const count = duringServiceLoad ? 1 : ROUNDS;
    for (let round = 0; round < count; round++) {
      await waitForQuiet(quiet);
      const ceilingResult = await runLoad({ url: ceiling.graphqlUrl, body, headers, serverPid: ceiling.child.pid, ...load });
      await waitForQuiet(quiet);
      const stopExtra = duringServiceLoad ? await duringServiceLoad() : undefined;
      let serviceResult;
      try {
        serviceResult = await runLoad({
          url: service.graphqlUrl,
          body,
          headers,
          expectBody: first.bytes.toString('utf8'),
          serverPid: service.child.pid,
          ...load,
        });
      } finally {
        if (stopExtra) extra = await stopExtra();
      }
      rounds.push({ service: serviceResult, ceiling: ceilingResult, ratio: serviceResult.rps / ceilingResult.rps });
    }
  } finally {
    await ceiling.stop();
  }

  const median = [...rounds].sort((a, b) => a.ratio - b.ratio)[Math.floor(rounds.length / 2)];
  const roundNote = rounds.length > 1 ? `; rounds ${rounds.map((r) => `${r.ratio.toFixed(2)}×`).join(', ')} (median shown)` : '';
  return {
    scenario: scenario.label ?? scenario.name,
    service: median.service,
    ceiling: median.ceiling,
    ratio: median.ratio,
    target: scenario.target,
    responseBytes: first.bytes.length,
    notes: notesFor(median.service, median.ceiling, first.bytes.length) + roundNote,
    extra,
  };
}

async function fetchChecked(url, body, scenario) {
  const response = await postGraphQL(url, body);
  const text = response.bytes.toString('utf8');
  if (response.status !== 200) throw new Error(`${scenario.name}: HTTP ${response.status}: ${text.slice(0, 500)}`);
  const json = JSON.parse(text);
  if (json.errors) throw new Error(`${scenario.name}: errors in the response: ${text.slice(0, 500)}`);
  scenario.check?.(json);
  return response;
}

const pct = (x) => `${Math.round(x * 100)}%`;
/** Response size, CPU per request (server share of a core, generator share), and any problems. */
export function notesFor(service, ceiling, bytes) {
  const cpu = (r) =>
    (r.serverCpuUsPerReq === undefined ? '' : `${Math.round(r.serverCpuUsPerReq)} µs/req, ${pct(r.serverCpu)} CPU, `) +
    `gen ${pct(r.generatorCpu)}` +
    (r.otherCpu === undefined ? '' : `, other ${pct(r.otherCpu)}`);
  const problems = [`service ${cpu(service)}`, `ceiling ${cpu(ceiling)}`];
  // CPU per request, ceiling ÷ service: steadier than the req/s ratio when the machine is shared.
  if (service.serverCpuUsPerReq && ceiling.serverCpuUsPerReq) {
    problems.unshift(`CPU ratio ${(ceiling.serverCpuUsPerReq / service.serverCpuUsPerReq).toFixed(3)}×`);
  }
  for (const [who, r] of [['service', service], ['ceiling', ceiling]]) {
    const bad = r.non2xx + r.errors + r.timeouts;
    if (bad > 0) problems.push(`${who}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`);
    if (r.warmup?.mismatches) problems.push(`${who}: ${r.warmup.mismatches} wrong bodies in warm-up`);
  }
  return [`${bytes} B`, ...problems].join('; ');
}
