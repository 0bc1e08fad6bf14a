import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { query } from '../helpers/postgres.js';
import { freeLoopbackPort, testBackend, TEST_SECRET } from '../helpers/server.js';
import { builtEntry } from '../helpers/service-build.js';

/**
 * The real service as `npm start` runs it (src/main.ts compiled, its own process), for what only
 * a process shows: what it writes to stdout, and tracing, which starts before the app's
 * modules load. On the project's backend: a fresh SQLite file, or a fresh PostgreSQL
 * database with the shared Redis under a key prefix of its own.
 */
export interface ServiceProcess {
  url: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export interface ServiceOptions {
  /** Runs it on a pseudo-terminal (util-linux `script`), as in a developer's shell. */
  terminal?: boolean;
}

export async function startService(env: Record<string, string>, options: ServiceOptions = {}): Promise<ServiceProcess> {
  const port = await freeLoopbackPort();
  const url = `http://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-obs-'));
  const backend = await backendEnv(dir);
  const { REDIS_URL: _redis, DATABASE_URL: _db, ...inherited } = process.env;
  const main = await builtEntry('main');
  const command: [string, string[]] = options.terminal
    ? ['script', ['--quiet', '--flush', '--return', '--command', `'${process.execPath}' '${main}'`, '/dev/null']]
    : [process.execPath, [main]];
  const child: ChildProcess = spawn(command[0], command[1], {
    env: {
      ...inherited,
      NODE_ENV: 'development',
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: url,
      AUTH_SECRET: TEST_SECRET,
      BCRYPT_COST: '4',
      SEED_DEMO_DATA: 'never',
      RATE_LIMIT_MAX: '100000',
      // Many operations from one caller in quick succession: the default cost bucket would refuse some.
      COST_LIMIT: '1000000000',
      ...backend.env,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const cleanUp = async () => {
    await backend.drop();
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 30_000;
  while (!output.includes('Inkwell GraphQL endpoint')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      await cleanUp();
      throw new Error(`the service did not start (exit ${child.exitCode}):\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await exited;
      }
      await cleanUp();
    },
  };
}

async function backendEnv(dir: string): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  const postgresUrl = process.env.INKWELL_TEST_POSTGRES_URL;
  const redisUrl = process.env.INKWELL_TEST_REDIS_URL;
  if (testBackend !== 'postgres' || !postgresUrl || !redisUrl) {
    return { env: { DATABASE_URL: `file:${join(dir, 'inkwell.db')}` }, drop: async () => {} };
  }
  const id = randomBytes(6).toString('hex');
  const name = `inkwell_obs_${id}`;
  await query(postgresUrl, `create database ${name}`);
  const database = new URL(postgresUrl);
  database.pathname = `/${name}`;
  return {
    env: { DATABASE_URL: database.toString(), DATABASE_POOL_SIZE: '5', REDIS_URL: redisUrl, REDIS_KEY_PREFIX: `test-obs-${id}:` },
    drop: () => query(postgresUrl, `drop database if exists ${name} with (force)`).then(() => {}, () => {}),
  };
}
