/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): self and total time per
 * function, and self time per package/file group. Plain text tables for a report.
 */
import { readFileSync } from 'node:fs';

export function loadProfile(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Where a frame comes from: a package under node_modules, a dist/ file, node internals… */
export function groupOf(url) {
  if (!url) return '(native/VM)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return `inkwell ${url.slice(dist + 1)}`;
  if (url.startsWith('node:')) return 'node core';
  return url;
}

const shortUrl = (url) => {
  if (!url) return '';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.indexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 1) : url;
};

export function summarise(profile) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i++) {
    const dt = timeDeltas[i + 1] ?? 0;
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + dt);
  }
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  const keyOf = (n) => {
    const f = n.callFrame;
    return `${f.functionName || '(anonymous)'} ${shortUrl(f.url)}:${f.lineNumber + 1}`;
  };
  const fn = new Map();
  const groups = new Map();
  let totalUs = 0;
  let idleUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    totalUs += us;
    if (node.callFrame.functionName === '(idle)') idleUs += us;
    const key = keyOf(node);
    const entry = fn.get(key) ?? { key, self: 0, total: 0 };
    entry.self += us;
    fn.set(key, entry);
    const group = ['(garbage collector)', '(program)', '(idle)'].includes(node.callFrame.functionName)
      ? node.callFrame.functionName
      : groupOf(node.callFrame.url);
    groups.set(group, (groups.get(group) ?? 0) + us);
    // total time: every distinct function on the stack gets this sample once
    const seen = new Set();
    for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
      const k = keyOf(byId.get(cur));
      if (seen.has(k)) continue;
      seen.add(k);
      const e = fn.get(k) ?? { key: k, self: 0, total: 0 };
      e.total += us;
      fn.set(k, e);
    }
  }
  return { totalUs, idleUs, busyUs: totalUs - idleUs, functions: [...fn.values()], groups: [...groups.entries()] };
}

export function formatSummary(summary, { top = 30 } = {}) {
  const { busyUs, totalUs, idleUs } = summary;
  const pct = (us) => `${((100 * us) / busyUs).toFixed(1)}%`.padStart(6);
  const msText = (us) => `${(us / 1000).toFixed(0)} ms`.padStart(9);
  const lines = [
    `profile: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(idleUs / 1e6).toFixed(1)} s idle; percentages are of the ${(busyUs / 1e6).toFixed(1)} s busy time`,
    '',
    'self time by package / file:',
  ];
  for (const [group, us] of summary.groups.filter(([g]) => g !== '(idle)').sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    lines.push(`  ${pct(us)} ${msText(us)}  ${group}`);
  }
  lines.push('', `top ${top} functions by self time:`);
  for (const f of summary.functions.filter((f) => !f.key.startsWith('(idle)')).sort((a, b) => b.self - a.self).slice(0, top)) {
    lines.push(`  ${pct(f.self)} ${msText(f.self)}  ${f.key}`);
  }
  lines.push('', `top ${top} functions by total (inclusive) time:`);
  for (const f of summary.functions.filter((f) => !f.key.startsWith('(')).sort((a, b) => b.total - a.total).slice(0, top)) {
    lines.push(`  ${pct(f.total)} ${msText(f.total)}  ${f.key}`);
  }
  return lines.join('\n');
}
