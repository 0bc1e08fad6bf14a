/**
 * PostgreSQL and Redis for the scale-out benches, from Debian's packages (`.ci/run`
 * installs them): a throwaway cluster (`initdb` into a temporary directory, as the
 * `postgres` system user when we are root, since initdb refuses root) and a
 * redis-server, both on loopback ports of their own, stopped when the bench exits.
 * PostgreSQL keeps its default durability (fsync, synchronous commit), as in production.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { makeTempDir } from '../lib/seed.mjs';
import { freePort } from '../lib/service.mjs';

const PG_BASE = '/usr/lib/postgresql';

/** Why the scale-out benches cannot run here, or undefined when they can. */
export function missingServers() {
  const hasPostgres = existsSync(PG_BASE) && readdirSync(PG_BASE).some((v) => existsSync(join(PG_BASE, v, 'bin', 'initdb')));
  const hasRedis = spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
  if (!hasPostgres) return 'PostgreSQL is not installed (apt-get install postgresql)';
  if (!hasRedis) return 'redis-server is not installed (apt-get install redis-server)';
  return undefined;
}

const isRoot = () => process.getuid?.() === 0;
const stops = new Set();
let cleanupInstalled = false;
function onExit(stop) {
  stops.add(stop);
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', () => {
    for (const fn of stops) fn();
  });
}

export async function startPostgres() {
  const bin = readdirSync(PG_BASE)
    .filter((v) => existsSync(join(PG_BASE, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(PG_BASE, v, 'bin'))[0];
  const temp = makeTempDir('inkwell-bench-pg-'); // under os.tmpdir(): keep TMPDIR reachable for the postgres user
  const data = join(temp.dir, 'data');
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(temp.dir, uid, gid);
  }
  chmodSync(temp.dir, 0o700);
  const as = (tool, args) => (isRoot() ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args]);
  const [initCmd, initArgs] = as('initdb', ['-D', data, '-U', 'inkwell', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
  execFileSync(initCmd, initArgs, { stdio: 'ignore' });
  const port = await freePort();
  const [cmd, args] = as('postgres', [
    '-D', data, '-p', String(port),
    '-c', 'listen_addresses=127.0.0.1',
    '-c', `unix_socket_directories=${temp.dir}`,
    '-c', 'max_connections=200',
    '-c', 'shared_buffers=128MB',
    // Extra settings for a diagnosis, e.g. 'shared_preload_libraries=pg_stat_statements'.
    ...(process.env.BENCH_POSTGRES_SETTINGS ?? '').split(' ').filter(Boolean).flatMap((setting) => ['-c', setting]),
  ]);
  const child = spawn(cmd, args, { stdio: 'ignore' });
  const pid = () => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
    } catch {
      return undefined;
    }
  };
  const kill = (signal) => {
    const p = pid() ?? child.pid;
    try {
      if (p) process.kill(p, signal);
    } catch {
      // gone
    }
  };
  onExit(() => kill('SIGQUIT'));
  const url = `postgres://inkwell@127.0.0.1:${port}/postgres`;
  await until(async () => {
    await query(url, 'select 1');
    return true;
  }, 30_000, 'PostgreSQL to start');
  return {
    url,
    async createDatabase(name) {
      await query(url, `create database ${name}`);
      return `postgres://inkwell@127.0.0.1:${port}/${name}`;
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      kill('SIGINT');
      await exited;
      temp.remove();
    },
  };
}

export async function startRedis() {
  const temp = makeTempDir('inkwell-bench-redis-');
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', temp.dir, '--loglevel', 'warning'],
    { stdio: 'ignore' },
  );
  onExit(() => child.kill('SIGKILL'));
  const url = `redis://127.0.0.1:${port}`;
  await until(() => spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() === 'PONG', 10_000, 'Redis to start');
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      temp.remove();
    },
  };
}

export async function query(url, text, values) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end().catch(() => {});
  }
}

async function until(check, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
