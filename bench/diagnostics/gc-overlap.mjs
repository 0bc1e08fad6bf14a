// A diagnostic, not a measurement: which fixed-rate rows of a full mixed run had a major GC,
// in the Inkwell measured or in an Inkwell that sat idle meanwhile (bench/results/fixed-rate.md,
// "Thirteenth and fourteenth runs"). It reads the run's output with each line prefixed by the
// epoch ms it was printed at, and the files of process-probe.cjs from every Inkwell of the run:
//
//   node bench/mixed/run.mjs --env=NODE_OPTIONS=--require=$PWD/bench/diagnostics/process-probe.cjs --env=PROBE_DIR=DIR \
//     | while IFS= read -r l; do printf '%s %s\n' "$(date +%s%3N)" "$l"; done > LOG
//   node bench/diagnostics/gc-overlap.mjs LOG DIR
//
// A fixed-rate block measures the reference, then each Inkwell, 2 s warm-up and 8 s each
// (bench/mixed/run.mjs); the Inkwell measured in a slot is the probed process that used the
// most CPU on its event loop there. A major GC is a pause of kind 4 (mark-compact) of 8 ms or more.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MAJOR = 4;
const MIN_PAUSE_MS = 8;
const SLOT_MS = 10_000;

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

/** The event loop's CPU ticks of a probed process between two times. */
function loopTicks(probe, from, to) {
  const inside = probe.ticks.filter((t) => t[0] >= from && t[0] <= to);
  if (inside.length < 2) return 0;
  const ticks = (t) => t[2][probe.pid]?.[1] ?? 0;
  return ticks(inside[inside.length - 1]) - ticks(inside[0]);
}

const majors = (probe, from, to) => probe.gcs.filter(([at, ms, kind]) => kind === MAJOR && ms >= MIN_PAUSE_MS && at >= from && at <= to);

// One slot per Inkwell measured: two after the reference ("reference then on, off"), or one ("reference then Inkwell").
const slots = [];
for (const { at, text } of lines.filter((l) => / fixed rate, reference then /.test(l.text))) {
  const inkwells = /reference then Inkwell/.test(text) ? 1 : text.split('reference then ')[1].split(',').length;
  for (let i = 1; i <= inkwells; i++) slots.push({ from: at + i * SLOT_MS + 2_000, to: at + (i + 1) * SLOT_MS });
}

const tally = { pass: { rows: 0, own: 0, idle: 0 }, fail: { rows: 0, own: 0, idle: 0 } };
slots.forEach(({ from, to }, i) => {
  const row = table[i] ?? { scenario: `slot ${i + 1} (no table row)`, p99: '?', pass: true };
  const measured = probes.reduce((best, p) => (loopTicks(p, from, to) > loopTicks(best, from, to) ? p : best));
  const own = majors(measured, from, to);
  const idle = probes.filter((p) => p !== measured).flatMap((p) => majors(p, from, to));
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
