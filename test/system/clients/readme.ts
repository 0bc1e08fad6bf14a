import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from '../ops/helpers.js';

/*
 * The README's client snippets, read from README.md itself so that it cannot drift from
 * what the tests run. Each ```js or ```ts block is named by the `<!-- snippet: name -->`
 * comment right above it; `npm install …` in the text between the previous block and
 * the comment names the packages it needs. A test takes a snippet with `snippet('name')`
 * (test/system/ops/readme-snippets.test.ts checks that every block is named and taken).
 */

/** The addresses the README writes; a test swaps in its own server's. */
export const README_HTTP = 'http://127.0.0.1:4000';
export const README_WS = 'ws://127.0.0.1:4000';
export const README_API = 'https://api.example.com';

export interface Snippet {
  name: string;
  lang: string;
  code: string;
  /** The packages of the nearest `npm install …` above it, or [] when there is none. */
  install: string[];
  /** 1-based line of the opening fence. */
  line: number;
}

export interface ReadmeBlock {
  lang: string;
  line: number;
  name?: string;
}

const readme = () => readFileSync(join(ROOT, 'README.md'), 'utf8');

/** Every fenced block of the README, with its language and its name when it has one. */
export function readmeBlocks(): (ReadmeBlock & { code: string; end: number })[] {
  const lines = readme().split('\n');
  const blocks: (ReadmeBlock & { code: string; end: number })[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((line, j) => j > i && line.startsWith('```'));
    if (end === -1) throw new Error(`README.md:${i + 1}: a block that never closes`);
    const marker = /^<!-- snippet: ([\w-]+) -->$/.exec(lines[i - 1] ?? '');
    blocks.push({
      lang: open[1] ?? '',
      line: i + 1,
      ...(marker ? { name: marker[1] } : {}),
      code: lines.slice(i + 1, end).join('\n') + '\n',
      end: end + 1,
    });
    i = end;
  }
  return blocks;
}

/** The packages of the `npm install …` mentions in a stretch of the README (inline or in a block). */
function installs(text: string): string[] {
  const mentions = [...text.matchAll(/`npm install ([^`]+)`/g), ...text.matchAll(/^npm install (.+)$/gm)].map((m) => m[1] ?? '');
  const words = (mention: string) => {
    const all = mention.trim().split(/\s+/);
    const stop = all.findIndex((word) => ['&&', ';', '||'].includes(word) || word.startsWith('#'));
    return (stop === -1 ? all : all.slice(0, stop)).filter((word) => !word.startsWith('-'));
  };
  return mentions.flatMap(words);
}

/**
 * The named snippets. A snippet's packages are those of the `npm install` mentions
 * between the previous named snippet and it, or, when there are none, the nearest
 * such mentions further up (two snippets of one setup share one line).
 */
export function readmeSnippets(): Snippet[] {
  const lines = readme().split('\n');
  const named = readmeBlocks().filter((block) => block.name !== undefined);
  const before = named.map((block, k) => lines.slice(k === 0 ? 0 : named[k - 1]!.end, block.line - 1).join('\n'));
  return named.map((block, k) => {
    let install: string[] = [];
    for (let j = k; j >= 0 && install.length === 0; j--) install = installs(before[j]!);
    return { name: block.name!, lang: block.lang, code: block.code, install, line: block.line };
  });
}

/** The snippet of that name; a test that names a missing one fails. */
export function snippet(name: string): Snippet {
  const found = readmeSnippets().find((s) => s.name === name);
  if (!found) throw new Error(`README.md has no <!-- snippet: ${name} -->`);
  return found;
}

/** The packages a snippet imports (`@scope/name` or `name`, without subpaths or node: builtins). */
export function importedPackages(code: string): string[] {
  const specifiers = [...code.matchAll(/^\s*import\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? '');
  const packages = specifiers
    .filter((s) => !s.startsWith('.') && !s.startsWith('node:'))
    .map((s) => (s.startsWith('@') ? s.split('/').slice(0, 2).join('/') : s.split('/')[0]!));
  return [...new Set(packages)];
}

/** The snippet's code with the README's addresses replaced by a live server's. */
export function live(code: string, serverUrl: string): string {
  const ws = serverUrl.replace(/^http/, 'ws');
  return code.replaceAll(README_HTTP, serverUrl).replaceAll(README_WS, ws).replaceAll(README_API, serverUrl);
}

let modules = 0;

/**
 * Saves snippets, in order, as one ES module in `dir` (inside the checkout, so that their
 * imports resolve to its node_modules), with the live server's addresses and `glue`
 * appended (exports for the test), and imports it: a fresh module, with fresh state, each
 * time.
 */
export async function importSnippets<T>(dir: string, serverUrl: string, names: string[], glue: string): Promise<T> {
  const file = join(dir, `snippets-${++modules}.mjs`);
  const parts = names.map((name) => `// README.md: ${name}\n${live(snippet(name).code, serverUrl)}`);
  writeFileSync(file, `${parts.join('\n')}\n// the test's\n${glue}\n`);
  return (await import(pathToFileURL(file).href)) as T;
}
