/**
 * Result rows and the markdown tables. A row:
 *   { scenario, service: { rps, p50, p99 }, ceiling: { rps, p50, p99 } | null,
 *     ratio?, target?, pass?, p99Max?, table?, notes?, footnotes?, base?, baseRatio? }
 * ratio defaults to service.rps / ceiling.rps, pass to ratio >= target. `p99Max` (ms)
 * adds a pass/fail cell for the service's p99. `table` names the table a row belongs
 * in (TABLES below): what the two sides are; the default is service against ceiling.
 */

const int = (n) => (n === undefined || n === null || Number.isNaN(n) ? '–' : Math.round(n).toLocaleString('en-US'));
const ms = (n) => (n === undefined || n === null || Number.isNaN(n) ? '–' : `${Number(n).toFixed(n < 10 ? 1 : 0)}`);
const ratioText = (r) => (r === undefined || r === null || Number.isNaN(r) ? '–' : `${r.toFixed(3)}×`);

export function completeRow(row) {
  const ratio = row.ratio ?? (row.ceiling?.rps ? row.service.rps / row.ceiling.rps : undefined);
  const pass = row.pass ?? (row.target !== undefined && ratio !== undefined ? ratio >= row.target : undefined);
  return { ...row, ratio, pass };
}

/** The tables rows can go to: their title and what the two sides (service, ceiling) are. */
export const TABLES = {
  ceiling: { title: undefined, measured: 'service', baseline: 'ceiling' },
  reference: {
    title: 'Inkwell against the plain reference (bench/reference/: Fastify + Mercurius, DataLoaders, no cache); ratio = Inkwell ÷ reference',
    measured: 'Inkwell',
    baseline: 'reference',
  },
  hits: {
    title: 'A response-cache hit against executions of the same query (bench/hits/); ratio = the hit ÷ the execution',
    measured: 'Inkwell hit',
    baseline: 'execution',
  },
  fixedRate: {
    title:
      "Latency below saturation: requests sent on schedule at a fixed rate, BENCH_MIXED_FIXED_RATE (0.5 unless set) × the reference's closed-loop req/s in the same run (open loop, bench/mixed/open-loop.mjs); ratio = answered req/s, Inkwell ÷ reference",
    measured: 'Inkwell',
    baseline: 'reference',
  },
  backends: {
    title: 'Inkwell on PostgreSQL + Redis against Inkwell on SQLite, same rounds; ratio = PostgreSQL ÷ SQLite',
    measured: 'PostgreSQL',
    baseline: 'SQLite',
  },
};

/** One table per `row.table`, in the order of TABLES; each row's `footnotes` (deduplicated) go under its table. */
export function formatTables(rows) {
  const parts = [];
  for (const [name, labels] of Object.entries(TABLES)) {
    const mine = rows.filter((r) => (r.table ?? 'ceiling') === name);
    if (mine.length === 0) continue;
    const footnotes = [...new Set(mine.flatMap((r) => r.footnotes ?? []))].map((f) => `- ${f}`).join('\n');
    parts.push([labels.title && `### ${labels.title}\n`, formatTable(mine, labels), footnotes && `\n${footnotes}`].filter(Boolean).join('\n'));
  }
  return parts.join('\n\n');
}

/**
 * Columns: req/s and server CPU µs per request of each side (when measured), latencies,
 * the ratio and target. A row with `base` (another build of the measured side, e.g.
 * BENCH_BASELINE's Inkwell: { rps, serverCpuUsPerReq }) and `baseRatio` ({ rps, cpu }:
 * measured ÷ base) adds the baseline's columns.
 */
export function formatTable(rows, { measured = 'service', baseline = 'ceiling' } = {}) {
  const p99Max = rows.find((r) => r.p99Max !== undefined)?.p99Max;
  const cpu = rows.some((r) => r.service?.serverCpuUsPerReq !== undefined || r.ceiling?.serverCpuUsPerReq !== undefined);
  const base = rows.some((r) => r.base);
  const header = [
    'scenario',
    `${measured} req/s`, ...(cpu ? [`${measured} µs/req`] : []), 'p50 ms', 'p99 ms',
    `${baseline} req/s`, ...(cpu ? [`${baseline} µs/req`] : []), `${baseline} p50 ms`, `${baseline} p99 ms`,
    'ratio', 'target', 'pass/fail', ...(p99Max === undefined ? [] : [`p99 < ${p99Max} ms`]),
    ...(base ? ['baseline build req/s', 'baseline build µs/req', 'current ÷ baseline req/s', 'current ÷ baseline µs/req'] : []),
    'notes',
  ];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((h, i) => (i === 0 || i === header.length - 1 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const raw of rows) {
    const r = completeRow(raw);
    const cells = [
      r.scenario,
      int(r.service?.rps), ...(cpu ? [int(r.service?.serverCpuUsPerReq)] : []), ms(r.service?.p50), ms(r.service?.p99),
      int(r.ceiling?.rps), ...(cpu ? [int(r.ceiling?.serverCpuUsPerReq)] : []), ms(r.ceiling?.p50), ms(r.ceiling?.p99),
      ratioText(r.ratio),
      r.target === undefined ? '–' : `≥ ${r.target.toFixed(2)}×`,
      r.pass === undefined ? '–' : r.pass ? 'pass' : '**FAIL**',
      ...(p99Max === undefined ? [] : [p99Cell(r)]),
      ...(base ? [int(r.base?.rps), int(r.base?.serverCpuUsPerReq), ratioText(r.baseRatio?.rps), ratioText(r.baseRatio?.cpu)] : []),
      r.notes ?? '',
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function p99Cell(r) {
  if (r.p99Max === undefined || typeof r.service?.p99 !== 'number') return '–';
  return r.service.p99 < r.p99Max ? 'pass' : '**FAIL**';
}
