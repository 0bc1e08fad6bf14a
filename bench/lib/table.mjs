/**
 * Result rows and the markdown table. A row:
 *   { scenario, service: { rps, p50, p99 }, ceiling: { rps, p50, p99 } | null,
 *     ratio?, target?, pass?, notes? }
 * ratio defaults to service.rps / ceiling.rps, pass to ratio >= target.
 */

const int = (n) => (n === undefined || n === null || Number.isNaN(n) ? '–' : Math.round(n).toLocaleString('en-US'));
const ms = (n) => (n === undefined || n === null || Number.isNaN(n) ? '–' : `${Number(n).toFixed(n < 10 ? 1 : 0)}`);
const ratioText = (r) => (r === undefined || r === null || Number.isNaN(r) ? '–' : `${r.toFixed(3)}×`);

export function completeRow(row) {
  const ratio = row.ratio ?? (row.ceiling?.rps ? row.service.rps / row.ceiling.rps : undefined);
  const pass = row.pass ?? (row.target !== undefined && ratio !== undefined ? ratio >= row.target : undefined);
  return { ...row, ratio, pass };
}

export function formatTable(rows) {
  const header = [
    'scenario', 'service req/s', 'p50 ms', 'p99 ms', 'ceiling req/s', 'ceiling p50 ms', 'ceiling p99 ms',
    'ratio', 'target', 'pass/fail', 'notes',
  ];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((h, i) => (i === 0 || i === header.length - 1 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const raw of rows) {
    const r = completeRow(raw);
    const cells = [
      r.scenario,
      int(r.service?.rps), ms(r.service?.p50), ms(r.service?.p99),
      int(r.ceiling?.rps), ms(r.ceiling?.p50), ms(r.ceiling?.p99),
      ratioText(r.ratio),
      r.target === undefined ? '–' : `≥ ${r.target.toFixed(2)}×`,
      r.pass === undefined ? '–' : r.pass ? 'pass' : '**FAIL**',
      r.notes ?? '',
    ];
    lines.push(`| ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
