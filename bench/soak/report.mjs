/**
 * The soak's verdict and its markdown: one row per minute, then the checks — zero 5xx
 * and socket errors, heap and RSS flat from minute 2 (SOAK_BASE_MINUTE) on, the last
 * minute's p99 within 1.5× of minute 2's, every event delivered — each PASS or FAIL.
 */

export const LIMITS = { growth: 0.1, p99Ratio: 1.5 };
const MB = 1024 * 1024;

const num = (n, digits = 0) => (n === undefined || n === null || Number.isNaN(n) ? '–' : Number(n).toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const pct = (x) => (x === undefined || Number.isNaN(x) ? '–' : `${Math.round(x * 100)}%`);
const signedPct = (x) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %`;
const verdict = (ok) => (ok === undefined ? 'n/a' : ok ? 'PASS' : 'FAIL');
const sum = (list, f) => list.reduce((total, x) => total + f(x), 0);

/** HTTP faults of one minute: non-2xx responses, socket errors and timeouts, failed sign-ups. */
const httpFaults = (m) => m.traffic.non2xx + m.traffic.errors + m.traffic.timeouts + m.registrations.failed;

/** { checks: [{ name, pass, detail }], pass } for one database's run. */
export function judge(run) {
  const { minutes, drain, totals } = run;
  const base = minutes[Math.min(run.params.baseMinute, minutes.length) - 1];
  const last = minutes[minutes.length - 1];
  const closes = mergeCloses([...minutes.map((m) => m.ws.closes), drain.closes]);
  const non2xx = sum(minutes, (m) => m.traffic.non2xx);
  const httpErrors = sum(minutes, (m) => m.traffic.errors + m.traffic.timeouts);
  const registrationsFailed = sum(minutes, (m) => m.registrations.failed);
  const wsErrors = sum(minutes, (m) => m.ws.errors) + drain.errors;
  const wrong = sum(minutes, (m) => m.traffic.badBodies);
  const growth = (f) => (f(last.memory) - f(base.memory)) / f(base.memory);
  const heapGrowth = growth((m) => m.heapUsed);
  const rssGrowth = growth((m) => m.rss);
  const p99Ratio = last.traffic.p99 / base.traffic.p99;
  /** With fewer than 3 minutes, "from minute 2 to the last" compares a minute with itself. */
  const comparable = last.minute > base.minute;
  const unlessAlone = (ok) => (comparable ? ok : undefined);
  const slow = closes['1013'] ?? 0;
  const firstProblem = [...minutes.map((m) => m.ws.firstProblem), drain.firstProblem, ...minutes.map((m) => m.registrations.firstProblem)].find(Boolean);
  const firstBad = minutes.map((m) => m.traffic.firstBad).find(Boolean);
  const checks = [
    {
      name: 'zero 5xx and zero socket errors',
      pass: non2xx + httpErrors + registrationsFailed + wsErrors === 0,
      detail:
        `HTTP: ${non2xx} non-2xx (5xx among them), ${httpErrors} socket errors/timeouts, ${registrationsFailed} failed sign-ups; ` +
        `WebSocket: ${wsErrors} errors/unexpected closes${Object.keys(closes).length ? ` (close codes ${JSON.stringify(closes)})` : ''}` +
        (firstProblem ? `; first: ${firstProblem}` : ''),
    },
    {
      name: 'zero wrong answers',
      pass: wrong === 0,
      detail: `${wrong} response bodies with "errors"${firstBad ? `; first: ${firstBad.slice(0, 200)}` : ''}`,
    },
    {
      name: `heap after GC flat (growth < ${LIMITS.growth * 100} %, minute ${base.minute} → ${last.minute})`,
      pass: unlessAlone(heapGrowth < LIMITS.growth),
      detail: `${num(base.memory.heapUsed / MB, 1)} → ${num(last.memory.heapUsed / MB, 1)} MB (${signedPct(heapGrowth)})`,
    },
    {
      name: `RSS flat (growth < ${LIMITS.growth * 100} %, minute ${base.minute} → ${last.minute})`,
      pass: unlessAlone(rssGrowth < LIMITS.growth),
      detail: `${num(base.memory.rss / MB, 1)} → ${num(last.memory.rss / MB, 1)} MB (${signedPct(rssGrowth)})`,
    },
    {
      name: `p99 of the last minute ≤ ${LIMITS.p99Ratio}× minute ${base.minute}'s`,
      pass: unlessAlone(p99Ratio <= LIMITS.p99Ratio),
      detail: `${num(base.traffic.p99)} → ${num(last.traffic.p99)} ms (${p99Ratio.toFixed(2)}×)`,
    },
    {
      name: 'no subscriber closed for not reading (1013)',
      pass: slow === 0,
      detail: `${slow} closed 1013`,
    },
    {
      name: 'every event delivered',
      pass: totals.received === totals.due,
      detail:
        `${num(totals.reactions)} reactions and ${num(totals.users)} new accounts published → ${num(totals.due)} deliveries due, ` +
        `${num(totals.received)} received (${num(drain.received)} of them after the load stopped)`,
    },
  ];
  return { checks, pass: checks.every((c) => c.pass !== false) };
}

function mergeCloses(list) {
  const out = {};
  for (const closes of list) for (const [code, n] of Object.entries(closes ?? {})) out[code] = (out[code] ?? 0) + n;
  return out;
}

/** One database's section: parameters, the minute table, the checks. */
export function formatRun(run) {
  const { label, params, minutes, setup } = run;
  const { checks, pass } = judge(run);
  const header = [
    'min', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'HTTP err', 'wrong', 'reactions', 'events due', 'received',
    'event p99 ms', 'WS err', 'RSS MB', 'heap MB', 'handles', 'server CPU', 'server µs/req', 'generator CPU', 'subscribers CPU', 'other CPU',
  ];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => ' ---: ').join('|')}|`];
  for (const m of minutes) {
    const cells = [
      m.minute, num(m.traffic.rps), num(m.traffic.p50), num(m.traffic.p99), m.traffic.non2xx,
      m.traffic.errors + m.traffic.timeouts + m.registrations.failed, m.traffic.badBodies, num(m.published.reactions),
      num(m.published.due), num(m.ws.received), num(m.ws.latency.p99), m.ws.errors,
      num(m.memory.rss / MB, 1), num(m.memory.heapUsed / MB, 1), num(m.memory.handles), pct(m.traffic.serverCpu), num(m.traffic.serverCpuUsPerReq), pct(m.traffic.generatorCpu), pct(m.subscribersCpu),
      pct(m.traffic.otherCpu === undefined ? undefined : Math.max(0, m.traffic.otherCpu - (m.subscribersCpu ?? 0))),
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  const gaps = minutes.map((m) => m.wallMs - m.traffic.duration * 1000);
  return [
    `### ${label} — ${verdict(pass)}`,
    '',
    `${params.minutes} × ${params.minuteSeconds} s of mixed traffic (${params.writePercent} % writes on ${params.hotPosts} posts, ` +
      `${Math.round(params.signedIn * 100)} % of reads signed in, ${params.connections} connections, ${params.accounts} accounts), ` +
      `one sign-up every ${params.registerMs / 1000} s; ${num(params.subscribers)} WebSocket subscribers ` +
      `(${num(setup.reactionSubscribers)} postReactionAdded over the ${params.hotPosts} posts, ${num(setup.userSubscribers)} userCreated, ` +
      `${num(setup.signedIn)} signed in) connected in ${num(setup.connectMs / 1000, 1)} s, all live before minute 1. ` +
      `Memory and handles of the service after a full GC (DevTools protocol), ${params.sampleAt} s into each minute; ` +
      `at start ${num(setup.memory.rss / MB, 1)} MB RSS, ${num(setup.memory.heapUsed / MB, 1)} MB heap, ${setup.memory.handles} handles; ` +
      `GC took ≤ ${Math.max(...minutes.map((m) => m.memory.gcMs))} ms. Gaps between minutes ≤ ${num(Math.max(...gaps))} ms.`,
    '',
    ...lines,
    '',
    ...checks.map((c) => `- ${verdict(c.pass)} ${c.name}: ${c.detail}`),
  ].join('\n');
}
