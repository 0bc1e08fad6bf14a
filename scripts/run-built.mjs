// Runs a compiled entry point of dist/ — `npm start`, `npm run user:role` — so that the
// operator commands work on a production install (`npm ci --omit=dev`: no TypeScript, no
// tsx). In a development checkout, where TypeScript is installed, it builds first
// (incrementally, a few seconds when nothing changed), so dist/ is never stale; on a
// production install it runs the dist/ that was built before the dev dependencies were
// pruned (README, "Running in production"). Usage: node scripts/run-built.mjs <entry> [args…]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [entry, ...args] = process.argv.slice(2);
if (!entry) fail('Usage: node scripts/run-built.mjs <entry in dist/, e.g. main or cli/user-role> [args…]');
const file = join(root, 'dist', `${entry}.js`);

if (canBuild()) {
  // The build's own output goes to stderr: a command's stdout carries only its answer.
  const npm = process.env.npm_execpath;
  const build = spawnSync(npm ? process.execPath : 'npm', [...(npm ? [npm] : []), 'run', '--silent', 'build'], {
    cwd: root,
    stdio: ['ignore', 2, 2],
  });
  if (build.status !== 0) fail('The build failed (see above); not running an outdated dist/.');
} else if (!existsSync(file)) {
  fail(
    `dist/${entry}.js is missing and TypeScript is not installed to build it. ` +
      'Build before pruning the dev dependencies: npm ci && npm run build && npm prune --omit=dev',
  );
}

process.argv = [process.argv[0] ?? process.execPath, file, ...args];
await import(pathToFileURL(file).href);

/**
 * A development checkout: the sources and the compiler are both here. The project's own
 * node_modules only: a TypeScript further up the tree is no sign of a checkout.
 */
function canBuild() {
  return ['src', 'tsconfig.build.json', 'node_modules/typescript/package.json'].every((path) => existsSync(join(root, path)));
}

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
