import { type ChildProcess, spawn } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_SECRET, freeLoopbackPort } from '../../helpers/server.js';
import { ROOT, linkTree, run, runOk } from './helpers.js';

/**
 * A production install, made the way the README says: build with the dev dependencies,
 * then `npm prune --omit=dev` (what `npm ci --omit=dev` leaves). There, with no tsc and
 * no tsx, `npm start` serves and `npm run user:role` makes an admin of a registered
 * account, on a SQLite file. The project is copied, its node_modules hard-linked.
 */
let dir: string;
let url: string;
let env: NodeJS.ProcessEnv;
let service: ChildProcess | undefined;
let serviceOutput = '';

beforeAll(async () => {
  // Outside the checkout: nothing may resolve from its node_modules.
  dir = mkdtempSync(join(tmpdir(), 'inkwell-production-install-'));
  for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
    copyFileSync(join(ROOT, file), join(dir, file));
  }
  for (const folder of ['src', 'scripts']) cpSync(join(ROOT, folder), join(dir, folder), { recursive: true });
  await linkTree(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  // npm rewrites its hidden lockfile when it prunes: that one file must not be shared.
  const hiddenLockfile = join(dir, 'node_modules', '.package-lock.json');
  if (existsSync(hiddenLockfile)) {
    rmSync(hiddenLockfile);
    copyFileSync(join(ROOT, 'node_modules', '.package-lock.json'), hiddenLockfile);
  }
  rmSync(join(dir, 'node_modules', '.vite'), { recursive: true, force: true });

  await runOk('npm', ['run', 'build'], { cwd: dir });
  await runOk('npm', ['prune', '--omit=dev', '--no-audit', '--no-fund'], { cwd: dir });

  const port = await freeLoopbackPort();
  url = `http://127.0.0.1:${port}`;
  env = {
    ...process.env,
    NODE_ENV: 'production',
    DATABASE_URL: `file:${join(dir, 'data', 'inkwell.db')}`,
    AUTH_SECRET: TEST_SECRET,
    BCRYPT_COST: '10',
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
  };
  delete env.REDIS_URL;
  // Its own process group, so that stopping it reaches npm, the shell and node alike.
  service = spawn('npm', ['start'], { cwd: dir, env, detached: true });
  service.stdout?.on('data', (chunk) => (serviceOutput += chunk));
  service.stderr?.on('data', (chunk) => (serviceOutput += chunk));
  await waitUntilReady();
}, 240_000);

afterAll(async () => {
  if (service?.pid !== undefined && service.exitCode === null) {
    const exited = new Promise((resolve) => service?.once('close', resolve));
    process.kill(-service.pid, 'SIGTERM');
    await exited;
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function waitUntilReady(): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (service?.exitCode !== null) throw new Error(`npm start exited ${service?.exitCode}:\n${serviceOutput}`);
    const status = await fetch(`${url}/readyz`).then((r) => r.status, () => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`not ready after 60 s:\n${serviceOutput}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const userRole = (...args: string[]) => run('npm', ['run', '--silent', 'user:role', '--', ...args], { cwd: dir, env });

async function login(email: string, password: string): Promise<{ status: number; role?: string }> {
  const response = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const body = (await response.json()) as { user?: { role: string } };
  return { status: response.status, role: body.user?.role };
}

describe('a production install (npm prune --omit=dev)', () => {
  it('has no TypeScript toolchain, only the compiled service', () => {
    expect(existsSync(join(dir, 'node_modules', 'typescript'))).toBe(false);
    expect(existsSync(join(dir, 'node_modules', 'tsx'))).toBe(false);
    expect(existsSync(join(dir, 'dist', 'cli', 'user-role.js'))).toBe(true);
  });

  it('npm run user:role makes a registered account an admin', async () => {
    const email = 'operator@inkwell.test';
    const password = 'a long enough password';
    const registered = await fetch(`${url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Operator', email, password }),
    });
    expect(registered.status).toBe(201);
    expect(await login(email, password)).toEqual({ status: 200, role: 'user' });

    const result = await userRole('OPERATOR@inkwell.test', 'admin');
    expect(result).toEqual({ status: 0, stdout: `${email} is now admin\n`, stderr: '' });
    // The running service re-reads the account: the next sign-in is an admin's.
    expect(await login(email, password)).toEqual({ status: 200, role: 'admin' });
  });

  it.each([
    [['nobody@inkwell.test', 'admin'], 'No account with the email nobody@inkwell.test\n'],
    [['operator@inkwell.test', 'overlord'], 'Invalid role "overlord": expected one of admin, editor, user\n'],
  ])('npm run user:role -- %j exits 1 with one clear line', async (args, message) => {
    const result = await userRole(...args);
    expect(result).toEqual({ status: 1, stdout: '', stderr: message });
  });

  it('without dist/ it says how to build instead of failing obscurely', async () => {
    const result = await run('node', ['scripts/run-built.mjs', 'cli/missing'], { cwd: dir, env });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('dist/cli/missing.js is missing');
    expect(result.stderr).toContain('npm prune --omit=dev');
  });
});
