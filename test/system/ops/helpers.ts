import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout the tests run in (on Node 24: scripts/test-on-node.sh's copy). */
export const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * A fresh folder under .tmp/ (ignored by git): on the same file system as node_modules,
 * so it can be hard-linked, and inside the project, so `import 'graphql-ws'` from a
 * file there resolves to the project's node_modules.
 */
export function scratchDir(prefix: string): string {
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  return mkdtempSync(join(ROOT, '.tmp', `${prefix}-`));
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end and collects its output (no shell). */
export function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

/** Like `run`, but a non-zero exit is an error carrying the output. */
export async function runOk(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<Run> {
  const result = await run(command, args, options);
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  }
  return result;
}

/** Copies a folder as hard links (fast, no space), or plainly across file systems. */
export async function linkTree(from: string, to: string): Promise<void> {
  const linked = await run('cp', ['-al', from, to], { cwd: ROOT });
  if (linked.status === 0) return;
  rmSync(to, { recursive: true, force: true });
  await runOk('cp', ['-a', from, to], { cwd: ROOT });
}
