import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const require = createRequire(import.meta.url);

/**
 * Tests mirror src/: test/<folder>/ holds the tests of src/<folder>/, test/system/ the
 * whole-service ones (clients, browsers, operations, failures, several instances).
 *
 * What reads or writes through the database, Redis or the stores built on them runs
 * once per backend; protocol-level behaviour (HTTP framing, negotiation, CORS, pages,
 * client libraries, what a browser does with them) is the same code on either and runs
 * on SQLite only.
 */
const perBackend = [
  'test/auth/**/*.test.ts',
  'test/cache/**/*.test.ts',
  'test/cli/**/*.test.ts',
  'test/domain/**/*.test.ts',
  'test/rate-limit/**/*.test.ts',
  'test/realtime/**/*.test.ts',
  'test/graphql/resolvers/**/*.test.ts',
  'test/graphql/operation/**/*.test.ts',
  'test/graphql/ws/**/*.test.ts',
  'test/graphql/sse/**/*.test.ts',
  'test/graphql/http/batching.test.ts',
  'test/observability/**/*.test.ts',
  'test/system/reliability/drain.test.ts',
  'test/system/reliability/crash.test.ts',
];
/**
 * Several instances on one PostgreSQL and one Redis, and PostgreSQL or Redis failing
 * under load: the postgres project only.
 */
const scale = ['test/system/scale/**/*.test.ts', 'test/system/reliability/cluster/**/*.test.ts', 'test/graphql/sse/instances.test.ts'];

const sqlite: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: 'sqlite',
    include: ['test/**/*.test.ts'],
    exclude: scale,
    env: { INKWELL_TEST_BACKEND: 'sqlite' },
    setupFiles: ['test/setup-backend.ts'],
  },
};

const postgres: TestProjectInlineConfiguration = {
  extends: true,
  test: {
    name: 'postgres',
    include: [...perBackend, ...scale],
    exclude: ['test/**/browser.test.ts'],
    env: { INKWELL_TEST_BACKEND: 'postgres' },
    // Starts one PostgreSQL cluster and one redis-server for the project's files.
    globalSetup: ['test/global-setup.ts'],
    setupFiles: ['test/setup-backend.ts'],
  },
};

/**
 * The postgres project needs Debian's `postgresql` and `redis-server` (.ci/run installs
 * them). On a machine without them it is left out with a warning, unless the run must
 * cover both databases (CI, or INKWELL_TEST_REQUIRE_BACKENDS=1): then it fails loudly.
 */
function serversInstalled(): boolean {
  const base = '/usr/lib/postgresql';
  const postgresOk = existsSync(base) && readdirSync(base).some((v) => existsSync(`${base}/${v}/bin/initdb`));
  const redisOk = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  return postgresOk && redisOk;
}
const required = Boolean(process.env.CI) || process.env.INKWELL_TEST_REQUIRE_BACKENDS === '1';
const withPostgres = required || serversInstalled();
if (!withPostgres) {
  console.warn('\n[inkwell] PostgreSQL or redis-server is not installed: running the SQLite project only.\n');
}

/**
 * Within each project, whole-service tests (test/system/: processes, browsers, installs,
 * the type check) first. Without timings from an earlier run (a fresh clone, CI) vitest
 * starts large files first, and these small files, the longest of the run, would end it
 * alone. Projects stay one after the other: a worker keeps one project's modules.
 */
class WholeServiceFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => (file.moduleId.includes('/test/system/') ? 0 : 1);
    const index = new Map(sorted.map((file, i) => [file, i]));
    return sorted.sort((a, b) => (a.project.name === b.project.name ? rank(a) - rank(b) : 0) || index.get(a)! - index.get(b)!);
  }
}

export default defineConfig({
  resolve: {
    // graphql 16 ships CJS and ESM builds without an exports map. Node (and every CJS
    // dependency such as graphql-jit) loads the CJS one; Vite would pick the ESM one,
    // and two copies of graphql refuse each other's schema. Pin the one Node uses.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    projects: withPostgres ? [sqlite, postgres] : [sqlite],
    // Each test file runs in its own process with its own database and servers.
    pool: 'forks',
    // Files of one worker share its module cache: the app's modules are imported once per worker, not once per file (docs/decisions.md, "Tests").
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    sequence: { sequencer: WholeServiceFirst },
    // Two cores. A third worker fills the time files spend waiting on the processes they
    // start; a fourth only adds CPU (docs/decisions.md, "Tests").
    maxWorkers: 3,
  },
});
