// A diagnostic, not a measurement: which fixed-rate rows of a full mixed run had a major GC,
// in the Inkwell measured or in an Inkwell that sat idle meanwhile (bench/results/fixed-rate.md,
// "Sixteenth and seventeenth runs"). It reads the run's output with each line prefixed by the
// epoch ms it was printed at, and the files of process-probe.cjs from every Inkwell of the run:
//
//   node bench/mixed/run.mjs --env=NODE_OPTIONS=--require=$PWD/bench/diagnostics/process-probe.cjs --env=PROBE_DIR=DIR \
//     | while IFS= read -r l; do printf '%s %s\n' "$(date +%s%3N)" "$l"; done > LOG
//   node bench/diagnostics/gc-overlap.mjs LOG DIR
//
// Each fixed-rate run logs the pid it measures as it starts (bench/mixed/run.mjs, `probed`):
// the reference's runs (not probed) are skipped, each Inkwell's is a slot from the end of its
// warm-up to the end of its measured seconds. A major GC is a pause of kind 4 (mark-compact)
// of 8 ms or more.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MAJOR = 4;
const MIN_PAUSE_MS = 8;
const [logFile, probeDir] = process.argv.slice(2);
if (!logFile || !probeDir) throw new Error('usage: gc-overlap.mjs LOG PROBE_DIR');
const lines = readFileSync(logFile, 'utf8')
  .split('\n')
  .filter((l) => /^\d{13} /.test(l))
  .map((l) => ({ at: Number(l.slice(0, 13)), text: l.slice(14) }));
const probes = readdirSync(probeDir).map((f) => ({ pid: f.match(/\d+/)[0], ...JSON.parse(readFileSync(join(probeDir, f), 'utf8')) }));

/** The fixed-rate table's rows, in the order they were measured: [scenario, p99 ms, verdict]. */
const table = (lines.map((l) => l.text).join('\n').split('### Latency below saturation')[1] ?? '')
  .split('\n###')[0]
  .split('\n')
  .filter((l) => l.startsWith('| ') && !l.startsWith('| scenario') && !l.startsWith('| ---'))
  .map((l) => l.split('|').map((cell) => cell.trim()))
  .map((cells) => ({ scenario: cells[1], p99: cells[5], pass: cells[13] === 'pass' }));

const majors = (probe, from, to) => probe.gcs.filter(([at, ms, kind]) => kind === MAJOR && ms >= MIN_PAUSE_MS && at >= from && at <= to);

// One slot per Inkwell measured, in the order of the table's rows.
const slots = [];
for (const { at, text } of lines) {
  const started = text.match(/fixed rate: pid (\d+) measured from now \((\d+) s warm-up, then (\d+) s\)/);
  if (!started) continue;
  const [, pid, warmup, duration] = started;
  const probe = probes.find((p) => p.pid === pid);
  if (probe) slots.push({ probe, from: at + Number(warmup) * 1000, to: at + (Number(warmup) + Number(duration)) * 1000 });
}

const tally = { pass: { rows: 0, own: 0, idle: 0 }, fail: { rows: 0, own: 0, idle: 0 } };
slots.forEach(({ probe, from, to }, i) => {
  const row = table[i] ?? { scenario: `slot ${i + 1} (no table row)`, p99: '?', pass: true };
  const own = majors(probe, from, to);
  const idle = probes.filter((p) => p !== probe).flatMap((p) => majors(p, from, to));
  const t = tally[row.pass ? 'pass' : 'fail'];
  t.rows++;
  if (own.length) t.own++;
  if (idle.length) t.idle++;
  const pauses = (gcs) => gcs.map(([, ms]) => `${ms} ms`).join(' ') || '–';
  console.log(`${row.pass ? 'pass' : 'FAIL'}  p99 ${row.p99} ms  own major GCs: ${pauses(own)}  idle Inkwells': ${pauses(idle)}  ${row.scenario}`);
});
for (const [verdict, t] of Object.entries(tally)) {
  console.log(`${verdict}: ${t.rows} rows, ${t.own} with a major GC of the Inkwell measured, ${t.idle} with one of an idle Inkwell`);
}
