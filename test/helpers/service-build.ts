import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * Tests that need the service as its own process (signals, stdout, crashes, several
 * instances, the operator command) run it compiled to JavaScript, as `npm start` does,
 * instead of through tsx: starting under tsx costs each process ~1.3 s more CPU, and a
 * run starts some seventy (docs/decisions.md, "Tests").
 *
 * The build is a plain per-file transpile of src/ (esbuild, no bundling; type checking
 * is `npm run typecheck`'s job), kept under .tmp/ in a folder named by a hash of src/:
 * built once, shared by the workers of a run and by later runs until src/ changes.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
const BUILDS = join(ROOT, '.tmp');
const PREFIX = 'service-build-';

let pending: Promise<string> | undefined;

/** The absolute path of a built entry point, e.g. `main` or `cli/user-role`. */
export async function builtEntry(name: string): Promise<string> {
  pending ??= buildOnce();
  return join(await pending, `${name}.js`);
}

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : [join(dir, entry.name)]))
    .sort();
}

async function buildOnce(): Promise<string> {
  const files = sourceFiles();
  const hash = createHash('sha256');
  for (const file of files) hash.update(relative(SRC, file)).update('\0').update(readFileSync(file)).update('\0');
  const target = join(BUILDS, `${PREFIX}${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(target)) return target;

  mkdirSync(BUILDS, { recursive: true });
  const scratch = mkdtempSync(join(BUILDS, 'building-'));
  const typescript = files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'));
  await build({ entryPoints: typescript, outdir: scratch, outbase: SRC, format: 'esm', platform: 'node', target: 'node20', logLevel: 'error' });
  // What the runtime reads beside its modules (the SDL, GraphiQL's files, the hash worker).
  for (const file of files.filter((f) => !f.endsWith('.ts'))) {
    const to = join(scratch, relative(SRC, file));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(file, to);
  }
  try {
    renameSync(scratch, target);
  } catch (error) {
    // Another worker finished the same build first: use its copy.
    rmSync(scratch, { recursive: true, force: true });
    if (!existsSync(target)) throw error;
  }
  for (const old of readdirSync(BUILDS).filter((name) => name.startsWith(PREFIX) && join(BUILDS, name) !== target)) {
    rmSync(join(BUILDS, old), { recursive: true, force: true });
  }
  return target;
}
