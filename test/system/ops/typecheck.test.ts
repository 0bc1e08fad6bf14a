import { createRequire } from 'node:module';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { ROOT, run } from './helpers.js';

/**
 * The whole project type-checks (src, tests, scripts, bench: tsconfig.json), as
 * `npm run typecheck` does. Run as a test file, it checks while the other files run
 * instead of before them (docs/decisions.md, "Tests").
 */
// TypeScript 7 exports no `bin/tsc` subpath: the file beside its package.json.
const TSC = join(createRequire(import.meta.url).resolve('typescript/package.json'), '..', 'bin', 'tsc');

it('tsc finds no type error', { timeout: 180_000 }, async () => {
  const result = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit', '--pretty', 'false'], { cwd: ROOT });
  expect(result.stdout + result.stderr).toBe('');
  expect(result.status).toBe(0);
});
