import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { ROOT, run, type Run } from '../system/ops/helpers.js';
import { createEnv, type TestEnv } from '../domain/helpers.js';
import { builtEntry } from '../helpers/service-build.js';

let env: TestEnv;

beforeAll(async () => {
  env = await createEnv();
  await env.services.users.insertAccount({ name: 'Alice', email: 'alice@inkwell.test' });
});
afterAll(async () => {
  await env.close();
});

/**
 * The command's logic on each backend, compiled from src/ (test/helpers/service-build.ts).
 * That `npm run user:role` runs it on a production install is
 * test/system/ops/production-install.test.ts.
 */
async function userRole(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const commandEnv = { ...process.env, NODE_ENV: 'test', DATABASE_URL: env.databaseUrl, ...extraEnv };
  return run(process.execPath, [await builtEntry('cli/user-role'), ...args], { cwd: ROOT, env: commandEnv });
}

describe('npm run user:role', () => {
  it('sets the role of an existing account', async () => {
    const result = await userRole(['ALICE@inkwell.test', 'admin']);
    expect(result).toMatchObject({ status: 0 });
    expect(result.stdout.trim()).toBe('alice@inkwell.test is now admin');
    expect(await env.services.users.findByEmail('alice@inkwell.test')).toMatchObject({ role: 'admin' });
  });

  it.each([
    [['nobody@inkwell.test', 'admin'], 'No account with the email nobody@inkwell.test'],
    [['alice@inkwell.test', 'overlord'], 'Invalid role "overlord"'],
    [['alice@inkwell.test'], 'Missing argument'],
  ])('%j exits 1 with a clear message', async (args, message) => {
    const result = await userRole(args);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(message);
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('exits 2 on a configuration error', async () => {
    const result = await userRole(['alice@inkwell.test', 'admin'], { DATABASE_URL: 'mysql://nope' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('DATABASE_URL');
  });
});
