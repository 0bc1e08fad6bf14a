import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/**
 * A throwaway PostgreSQL cluster for tests: `initdb` into a temporary directory, one
 * server on a free loopback port, trust authentication for the `inkwell` superuser,
 * durability settings off unless `durable` (see PostgresOptions). Runs as the
 * `postgres` system user when we are root (initdb refuses root).
 */
export interface PostgresCluster {
  /** `postgres://inkwell@127.0.0.1:<port>/postgres`: a superuser URL on the maintenance database. */
  url: string;
  port: number;
  dir: string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  dropDatabase(name: string): Promise<void>;
  /** Stops the server; `immediate` is a crash (no checkpoint), `fast` a clean shutdown. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  /** Stops the server for good and removes its files. */
  destroy(): Promise<void>;
}

export function findPostgresBin(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!existsSync(base)) return undefined;
  const versions = readdirSync(base)
    .filter((v) => existsSync(join(base, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(base, versions[0], 'bin') : undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a PostgreSQL binary, as the `postgres` user when we are root. */
function command(bin: string, tool: string, args: string[]): [string, string[]] {
  const path = join(bin, tool);
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
}

export interface PostgresOptions {
  /**
   * Real durability (fsync, synchronous commit): for the tests that crash the server and
   * count acknowledged writes. Otherwise a commit is acknowledged before its WAL is
   * written, which is fast and fine for everything else.
   */
  durable?: boolean;
}

export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresCluster> {
  const bin = findPostgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql');
  // As root the server runs as `postgres`, which must reach the directory: /tmp, not a
  // TMPDIR that may sit under root's home.
  const dir = mkdtempSync(join(isRoot() ? '/tmp' : tmpdir(), 'inkwell-pg-'));
  const data = join(dir, 'data');
  if (isRoot()) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  chmodSync(dir, 0o700);
  const port = await freePort();

  const [initCmd, initArgs] = command(bin, 'initdb', [
    '-D', data, '-U', 'inkwell', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync',
  ]);
  await run(initCmd, initArgs);

  let server: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const start = async () => {
    const [cmd, args] = command(bin, 'postgres', [
      '-D', data,
      '-p', String(port),
      '-c', 'listen_addresses=127.0.0.1',
      '-c', `unix_socket_directories=${dir}`,
      ...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      '-c', 'max_connections=300',
      '-c', 'shared_buffers=64MB',
      '-c', 'log_min_messages=fatal',
    ]);
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    server = child;
    exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`postgres exited (${child.exitCode}): ${stderr}`);
      try {
        await query(`postgres://inkwell@127.0.0.1:${port}/postgres`, 'select 1');
        return;
      } catch {
        if (Date.now() > deadline) throw new Error(`postgres did not start on port ${port}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  await start();

  const url = `postgres://inkwell@127.0.0.1:${port}/postgres`;
  const urlOf = (name: string) => `postgres://inkwell@127.0.0.1:${port}/${name}`;
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => {
    const child = server;
    if (!child || child.exitCode !== null) return;
    // postgres: SIGINT = fast shutdown, SIGQUIT = immediate (crash-like) shutdown. As
    // root our child is runuser, so signal the postmaster itself (its pid file).
    const pid = postmasterPid(data) ?? child.pid;
    if (pid) process.kill(pid, mode === 'fast' ? 'SIGINT' : 'SIGQUIT');
    const timer = setTimeout(() => pid && process.kill(pid, 'SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
    server = undefined;
  };

  return {
    url,
    port,
    dir,
    async createDatabase(name = `inkwell_${Math.random().toString(36).slice(2, 12)}`) {
      await query(url, `create database ${name}`);
      return urlOf(name);
    },
    async dropDatabase(name) {
      await query(url, `drop database if exists ${name} with (force)`);
    },
    stop,
    start,
    async destroy() {
      await stop('fast');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function postmasterPid(data: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** One statement on a short-lived connection. */
export async function query(url: string, text: string, values?: unknown[]): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end().catch(() => {});
  }
}
