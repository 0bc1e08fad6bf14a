import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { TEST_SECRET } from '../../helpers/server.js';
import { freePort, query } from '../../helpers/postgres.js';
import { builtEntry } from '../../helpers/service-build.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * Real service processes for the multi-instance tests: src/main.ts compiled
 * (test/helpers/service-build.ts), each with its own port, all on the PostgreSQL database and Redis
 * given. Their JSON log lines are kept for assertions.
 */
export interface Instance {
  name: string;
  url: string;
  port: number;
  logs: Record<string, unknown>[];
  /** The last few KB of standard error. */
  stderr(): string;
  child: ChildProcess;
  /** POSTs a GraphQL operation; `ip` becomes X-Forwarded-For (instances trust the proxy). */
  gql(query: string | undefined, variables?: Record<string, unknown>, init?: RequestOptions): Promise<Answer>;
  get(path: string, init?: RequestOptions): Promise<Answer>;
  /** POSTs JSON. */
  post(path: string, body: unknown, init?: RequestOptions): Promise<Answer>;
  /** SIGTERM, and the exit code once it has drained. */
  stop(): Promise<number | null>;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** The client address the instance sees (TRUST_PROXY=true); random when omitted. */
  ip?: string;
  extensions?: Record<string, unknown>;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/** A fresh database for one test file, created from the empty template0 (not the migrated template1). */
export async function freshDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `inkwell_scale_${randomBytes(5).toString('hex')}`;
  await query(adminUrl, `create database ${name} template template0`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await query(adminUrl, `drop database if exists ${name} with (force)`).catch(() => {});
    },
  };
}

export const randomIp = () => `10.${[0, 0, 0].map(() => Math.floor(Math.random() * 250) + 1).join('.')}`;

export async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  const child = spawn(process.execPath, [await builtEntry('main')], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      NODE_ENV: 'development',
      HOST: '127.0.0.1',
      PORT: String(port),
      AUTH_SECRET: TEST_SECRET,
      BCRYPT_COST: '4',
      LOG_LEVEL: 'info',
      SEED_DEMO_DATA: 'never',
      TRUST_PROXY: 'true',
      RATE_LIMIT_MAX: '100000',
      // Many operations from one caller in quick succession: the default cost bucket would refuse some.
      COST_LIMIT: '1000000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      try {
        logs.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        logs.push({ msg: line });
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`instance ${name} exited with ${child.exitCode}: ${stderr}`);
    try {
      const res = await fetch(`${url}/healthz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`instance ${name} did not start: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  const request = async (path: string, init: RequestInit & RequestOptions): Promise<Answer> => {
    const res = await fetch(`${url}${path}`, {
      ...init,
      headers: { 'x-forwarded-for': init.ip ?? randomIp(), ...(init.headers as Record<string, string> | undefined) },
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, headers: res.headers, body };
  };

  return {
    name,
    url,
    port,
    logs,
    stderr: () => stderr,
    child,
    gql: (text, variables, init = {}) =>
      request('/graphql', {
        method: 'POST',
        ip: init.ip,
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...init.headers },
        body: JSON.stringify({ query: text, variables, extensions: init.extensions }),
      }),
    get: (path, init = {}) => request(path, { method: 'GET', ip: init.ip, headers: init.headers }),
    post: (path, body, init = {}) =>
      request(path, { method: 'POST', ip: init.ip, headers: { 'content-type': 'application/json', ...init.headers }, body: JSON.stringify(body) }),
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Polls `check` until it returns true (or throws its last failure after `timeoutMs`). */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 10_000,
  what = 'condition',
  /** What the timeout error adds: the state the check saw last. */
  describe?: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${lastError ? `: ${String(lastError)}` : ''}${describe ? ` (${describe()})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The cookies a response sets, name → value. */
export function cookieValues(res: Response): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of res.headers.getSetCookie()) {
    const pair = raw.split(';')[0] ?? '';
    const eq = pair.indexOf('=');
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}
