import { spawn } from 'node:child_process';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createEnv, type TestEnv } from './helpers.js';

let env: TestEnv;

beforeAll(async () => {
  env = await createEnv();
  await env.services.users.insertAccount({ name: 'Alice', email: 'alice@inkwell.test' });
});
afterAll(async () => {
  await env.close();
});

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The command's logic, run from source on each backend. That `npm run user:role` runs the
 * compiled file on a production install is test/ops/production-install.test.ts.
 */
function run(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', 'src/cli/user-role.ts', ...args], {
      env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: env.databaseUrl, ...extraEnv },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('npm run user:role', () => {
  it('sets the role of an existing account', async () => {
    const result = await run(['ALICE@inkwell.test', 'admin']);
    expect(result).toMatchObject({ status: 0 });
    expect(result.stdout.trim()).toBe('alice@inkwell.test is now admin');
    expect(await env.services.users.findByEmail('alice@inkwell.test')).toMatchObject({ role: 'admin' });
  });

  it.each([
    [['nobody@inkwell.test', 'admin'], 'No account with the email nobody@inkwell.test'],
    [['alice@inkwell.test', 'overlord'], 'Invalid role "overlord"'],
    [['alice@inkwell.test'], 'Missing argument'],
  ])('%j exits 1 with a clear message', async (args, message) => {
    const result = await run(args);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('exits 2 on a configuration error', async () => {
    const result = await run(['alice@inkwell.test', 'admin'], { DATABASE_URL: 'mysql://nope' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('DATABASE_URL');
  });
});
