// Reads a survivor-probe.cjs profile: sampled bytes by allocation stack (its innermost
// DEPTH frames), largest first.   node bench/diagnostics/survivors.mjs FILE [DEPTH=5] [TOP=20]
import { readFileSync } from 'node:fs';

const [file, depth = '5', top = '20'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const frame = (f) => `${f.functionName || '(anonymous)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, 'dist/')}:${f.lineNumber + 1}`;
const bytesOf = new Map();
for (const sample of profile.samples) bytesOf.set(sample.nodeId, (bytesOf.get(sample.nodeId) ?? 0) + sample.size);

const byStack = new Map();
let total = 0;
(function walk(node, stack) {
  const here = [frame(node.callFrame), ...stack].slice(0, Number(depth));
  const bytes = bytesOf.get(node.id) ?? 0;
  if (bytes) {
    total += bytes;
    const key = here.join('\n      < ');
    byStack.set(key, (byStack.get(key) ?? 0) + bytes);
  }
  for (const child of node.children) walk(child, [frame(node.callFrame), ...stack]);
})(profile.head, []);

console.log(`sampled ${(total / 1e6).toFixed(1)} MB that no scavenge collected`);
for (const [stack, bytes] of [...byStack].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  console.log(`${(bytes / 1e6).toFixed(2).padStart(7)} MB  ${stack}\n`);
}
