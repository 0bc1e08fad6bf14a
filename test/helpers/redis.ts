import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './postgres.js';

/**
 * A throwaway redis-server for tests: loopback, a free port, no persistence, its
 * working directory in a temporary folder. `stop()` + `start()` restart it on the same
 * port (the fault tests); data does not survive a restart (a cache-only Redis) unless
 * `persistent` is set.
 */
export interface RedisServer {
  url: string;
  port: number;
  /** The running server's process id (to freeze it with SIGSTOP); undefined while stopped. */
  pid(): number | undefined;
  stop(): Promise<void>;
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export interface RedisServerOptions {
  /** Keep the data across restarts (append-only file, fsync on every write). */
  persistent?: boolean;
}

export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  if (!hasRedisServer()) throw new Error('redis-server is not installed: apt-get install redis-server');
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let server: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const start = async () => {
    const child = spawn(
      'redis-server',
      [
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--save', '',
        ...(options.persistent ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
        '--dir', dir,
        '--loglevel', 'warning',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
    server = child;
    exited = new Promise((resolve) => child.once('exit', () => resolve()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`redis-server exited (${child.exitCode}): ${stderr}`);
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.ping();
        client.disconnect();
        return;
      } catch {
        client.disconnect();
        if (Date.now() > deadline) throw new Error(`redis-server did not start on port ${port}: ${stderr}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  };
  const stop = async () => {
    const child = server;
    if (!child || child.exitCode !== null) return;
    // SIGTERM: a clean shutdown (the append-only file is complete); SIGKILL: a crash.
    child.kill(options.persistent ? 'SIGTERM' : 'SIGKILL');
    await exited;
    server = undefined;
  };
  await start();
  return {
    url,
    port,
    pid: () => (server && server.exitCode === null ? server.pid : undefined),
    stop,
    start,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Script calls (EVAL and EVALSHA) a Redis has answered so far, from its command statistics. */
export async function scriptCalls(client: Redis): Promise<number> {
  const stats = await client.info('commandstats');
  const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('eval') + calls('evalsha');
}
