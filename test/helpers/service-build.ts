import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

/**
 * Tests that need the service as its own process (signals, stdout, crashes, several
 * instances, the operator command) run it compiled to JavaScript, as `npm start` does,
 * not through tsx, and bundled: a run starts some forty, and a start takes ~1.45 s of CPU
 * bundled, ~2.5 s as one module per file, ~3.8 s under tsx (docs/decisions.md, "Tests").
 *
 * Each entry point is bundled by esbuild with its dependencies. Left outside: native
 * addons and the hashing threads' package, which load files of their own; `pg` and
 * `ioredis`, which the service `require`s on first use and tracing patches as they load,
 * and tracing's packages, which patch them (src/observability/tracing-start.ts);
 * `@fastify/cookie`, whose `await import('cookie')` esbuild's interop answers without
 * the named exports Node gives it. Type checking is `npm run typecheck`'s job. The
 * build is kept under .tmp/ in a folder named by a hash of src/ and of this file: built
 * once, shared by the workers of a run and by later runs until either changes.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');
const BUILDS = join(ROOT, '.tmp');
const PREFIX = 'service-build-';

const ENTRIES = ['main', 'cli/user-role'];
/** A lock older than this was left by a worker that died while building. */
const STALE_LOCK_MS = 60_000;
const EXTERNAL = ['better-sqlite3', 'bcrypt', 'piscina', 'pg', 'ioredis', '@opentelemetry/*', '@fastify/otel', '@fastify/cookie'];

let pending: Promise<string> | undefined;

/** The absolute path of a built entry point, e.g. `main` or `cli/user-role`. */
export async function builtEntry(name: string): Promise<string> {
  // A failed build is not kept: the next test of this worker tries again.
  pending ??= buildOnce().catch((error: unknown) => {
    pending = undefined;
    throw error;
  });
  return join(await pending, `${name}.js`);
}

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => (entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : [join(dir, entry.name)]))
    .sort();
}

async function buildOnce(): Promise<string> {
  const files = sourceFiles();
  const hash = createHash('sha256').update(readFileSync(fileURLToPath(import.meta.url)));
  for (const file of files) hash.update(relative(SRC, file)).update('\0').update(readFileSync(file)).update('\0');
  const target = join(BUILDS, `${PREFIX}${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(target)) return target;
  mkdirSync(BUILDS, { recursive: true });
  // One worker builds; the others wait for its folder (a build is ~2 s of CPU each).
  const lock = `${target}.lock`;
  try {
    mkdirSync(lock);
  } catch {
    return waitFor(target, lock);
  }
  try {
    // Another worker may have built it and let go of the lock since the check above.
    return existsSync(target) ? target : await buildInto(target, files);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Waits for another worker's build; takes over if it left its lock behind (it died). */
async function waitFor(target: string, lock: string): Promise<string> {
  while (!existsSync(target)) {
    let since: number;
    try {
      since = statSync(lock).mtimeMs;
    } catch {
      // Released: built (the folder is there), or the build failed and this one says why.
      return existsSync(target) ? target : buildOnce();
    }
    if (Date.now() - since > STALE_LOCK_MS) {
      rmSync(lock, { recursive: true, force: true });
      return buildOnce();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return target;
}

async function buildInto(target: string, files: string[]): Promise<string> {
  const scratch = mkdtempSync(join(BUILDS, 'building-'));
  try {
    await bundle(scratch, target);
  } catch (error) {
    rmSync(scratch, { recursive: true, force: true });
    throw error;
  }
  // What the runtime reads beside its modules (the SDL, GraphiQL's files, the hash worker).
  for (const file of files.filter((f) => !f.endsWith('.ts'))) {
    const to = join(scratch, relative(SRC, file));
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(file, to);
  }
  try {
    renameSync(scratch, target);
  } catch (error) {
    // Built meanwhile by a worker that took over a lock it judged stale: use that one.
    rmSync(scratch, { recursive: true, force: true });
    if (!existsSync(target)) throw error;
  }
  for (const old of readdirSync(BUILDS).filter((name) => name.startsWith(PREFIX) && !name.startsWith(basename(target)))) {
    rmSync(join(BUILDS, old), { recursive: true, force: true });
  }
  return target;
}

/** The entry points bundled into `outdir`, each module placed as if in `target`. */
async function bundle(outdir: string, target: string): Promise<void> {
  await build({
    entryPoints: ENTRIES.map((name) => join(SRC, `${name}.ts`)),
    outdir,
    outbase: SRC,
    bundle: true,
    // What main.ts imports dynamically stays a module of its own, loaded when it does:
    // the app's `pg` and `ioredis` must load after tracing has started.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    external: EXTERNAL,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Bundled CommonJS packages still call `require` for Node's built-ins.
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    plugins: [modulePlaces(target)],
    logLevel: 'error',
  });
}

/**
 * Each module of src/ keeps its own `import.meta.url` (where it would be unbundled), so
 * that the files it reads beside itself (the SDL, GraphiQL's, the hash worker) resolve
 * as they do in dist/; the folder named is the final one, not the scratch one.
 */
function modulePlaces(target: string): Plugin {
  return {
    name: 'module-places',
    setup(builder) {
      builder.onLoad({ filter: /\.ts$/ }, (args) => {
        if (!args.path.startsWith(SRC)) return undefined;
        const place = join(target, relative(SRC, args.path)).replace(/\.ts$/, '.js');
        const contents = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', JSON.stringify(pathToFileURL(place).href));
        return { contents, loader: 'ts' };
      });
    },
  };
}
