import { createRequire } from 'node:module';
import { expect, it } from 'vitest';
import { ROOT, run } from './helpers.js';

/**
 * The whole project type-checks (src, tests, scripts, bench: tsconfig.json), as
 * `npm run typecheck` does. Run as a test file, it checks while the other files run
 * instead of before them (docs/decisions.md, "Tests").
 */
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

it('tsc finds no type error', { timeout: 180_000 }, async () => {
  const result = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--noEmit', '--pretty', 'false'], { cwd: ROOT });
  expect(result.stdout + result.stderr).toBe('');
  expect(result.status).toBe(0);
});
