import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { TEST_SECRET, freeLoopbackPort } from '../../helpers/server.js';
import { builtEntry } from '../../helpers/service-build.js';

/**
 * The first run as a newcomer sees it (README "Quick start"): the service's entry point,
 * src/main.ts (what `npm start` runs, compiled), started in an empty folder with nothing
 * configured but the port — SQLite under ./data/, a generated secret — and its log read
 * as it writes it (JSON lines: stdout is not a terminal). The log must name a demo
 * account, and that account must sign in.
 */

interface Started {
  url: string;
  child: ChildProcess;
  /** The log records written so far. */
  records: { level: number; msg: string }[];
}

const folders: string[] = [];
const running: ChildProcess[] = [];

afterEach(async () => {
  for (const child of running.splice(0)) await stop(child);
});
afterAll(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

function emptyFolder(): string {
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-first-run-'));
  folders.push(dir);
  return dir;
}

/** Starts the service in `cwd` with only `env` set (and PATH), and waits until it listens. */
async function start(cwd: string, env: Record<string, string> = {}): Promise<Started> {
  const port = await freeLoopbackPort();
  const child = spawn(process.execPath, [await builtEntry('main')], {
    cwd,
    env: { PATH: process.env.PATH, PORT: String(port), ...env },
  });
  running.push(child);
  const records: Started['records'] = [];
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    const lines = output.split('\n');
    output = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('{')) records.push(JSON.parse(line));
  });
  let errors = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (records.some((r) => r.msg.startsWith('Inkwell GraphQL endpoint at'))) {
        clearInterval(timer);
        resolve();
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`the service exited ${child.exitCode}:\n${errors}`));
      }
    }, 50);
  });
  await listening;
  return { url: `http://127.0.0.1:${port}`, child, records };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('close', resolve));
  child.kill('SIGTERM');
  await exited;
}

const SEEDED = /^demo data seeded: sign in as (\S+) with password (\S+) \(every demo account is listed at (\S+)\)$/;

async function signIn(url: string, email: string, password: string): Promise<{ status: number; role?: string }> {
  const response = await fetch(`${url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const body = (await response.json()) as { user?: { role: string } };
  return { status: response.status, role: body.user?.role };
}

// Each start hashes the demo passwords at the default cost: seconds on a busy machine, so the time allowed is long.
describe('the first start', { timeout: 180_000 }, () => {
  it('says the demo data were seeded and names an account that signs in, and where the others are', async () => {
    const service = await start(emptyFolder());
    const lines = service.records.map((r) => r.msg).filter((msg) => SEEDED.test(msg));
    expect(lines).toHaveLength(1);
    const [, email, password, listed] = SEEDED.exec(lines[0]!)!;
    expect(email).toBe('editor@inkwell.test');
    expect(listed).toBe(`${service.url}/login`);

    expect(await signIn(service.url, email!, password!)).toEqual({ status: 200, role: 'editor' });
    const page = await fetch(listed!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`<code>${email}</code>`);
  });

  it('a restart on the same data seeds nothing and says nothing of it', async () => {
    const dir = emptyFolder();
    await stop((await start(dir)).child);
    const again = await start(dir);
    expect(again.records.filter((r) => r.msg.startsWith('demo data'))).toEqual([]);
    // The data are still there: the account still signs in.
    expect((await signIn(again.url, 'editor@inkwell.test', 'inkwell-demo')).status).toBe(200);
  });

  it('in production nothing is seeded and the log names no account', async () => {
    const service = await start(emptyFolder(), { NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET });
    expect(service.records.filter((r) => r.msg.startsWith('demo data'))).toEqual([]);
    expect(service.records.map((r) => r.msg).join('\n')).not.toContain('inkwell-demo');
    expect((await signIn(service.url, 'editor@inkwell.test', 'inkwell-demo')).status).toBe(401);
  });
});
