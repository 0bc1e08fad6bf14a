import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveAuthSecret, secretFilePath } from '../../src/auth/secret.js';
import { buildInkwell } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { channels } from '../../src/realtime/pubsub.js';
import { testBackend, type TestServer } from '../helpers/server.js';
import { PASSWORD, bearer, json, jsonOf, login, register, startServerAt, uniqueEmail } from './helpers.js';

let s: TestServer;
beforeAll(async () => {
  s = await startServerAt();
});
afterAll(async () => {
  await s?.close();
});

describe('registration', () => {
  it('concurrent registrations of one email: exactly one 201, the rest 409, never a 500', async () => {
    const email = uniqueEmail('race');
    const variants = [email, email.toUpperCase(), ` ${email}`, `${email} `];
    const responses = await Promise.all(
      Array.from({ length: 16 }, (_, i) => fetch(`${s.url}/api/auth/register`, json({ name: `Racer ${i}`, email: variants[i % variants.length], password: PASSWORD }))),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses.filter((st) => st === 201)).toHaveLength(1);
    expect(statuses.filter((st) => st === 409)).toHaveLength(15);
    for (const r of responses) expect(Object.keys(await jsonOf(r))).toEqual(r.status === 201 ? ['id', 'email'] : ['error']);
  });

  it('publishes userCreated', async () => {
    const iterator = s.inkwell.backends.pubsub.subscribe<{ email: string }>(channels.userCreated());
    const next = iterator.next();
    const email = uniqueEmail('event');
    await register(s.url, email);
    const event = await Promise.race([next, new Promise((_, reject) => setTimeout(() => reject(new Error('no event')), 5000))]);
    expect((event as IteratorResult<{ email: string }>).value.email).toBe(email);
    await iterator.return?.();
  });

  it('a name is optional (the address local part), and NUL in it is refused', async () => {
    const email = uniqueEmail('noname');
    await register(s.url, email, PASSWORD, '');
    const session = await login(s.url, email);
    const me = await jsonOf(await fetch(`${s.url}/api/me`, { headers: bearer(session.accessToken) }));
    expect(me.user.name).toBe(email.slice(0, email.indexOf('@')));
    const nul = await fetch(`${s.url}/api/auth/register`, json({ name: 'a\u0000b', email: uniqueEmail(), password: PASSWORD }));
    expect(nul.status).toBe(400);
  });
});

describe('AUTH_SECRET outside production', () => {
  const dir = mkdtempSync(join(tmpdir(), 'inkwell-secret-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const config = { authSecret: undefined, isProduction: false, database: { kind: 'sqlite' as const, file: join(dir, 'inkwell.db') } };

  it('is generated once (48 random bytes), kept next to the SQLite file with mode 0600, and reused', () => {
    const first = resolveAuthSecret(config);
    expect(first.source).toBe('generated');
    expect(first.file).toBe(join(dir, 'auth-secret'));
    expect(Buffer.from(first.secret, 'base64url')).toHaveLength(48);
    expect(statSync(first.file!).mode & 0o777).toBe(0o600);
    const second = resolveAuthSecret(config);
    expect(second).toEqual({ secret: first.secret, source: 'file', file: first.file });
  });

  it('tightens loosened permissions, and refuses a kept secret that is too short', () => {
    const file = secretFilePath(config);
    chmodSync(file, 0o644);
    resolveAuthSecret(config);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const other = mkdtempSync(join(tmpdir(), 'inkwell-secret-short-'));
    writeFileSync(join(other, 'auth-secret'), 'short\n', { mode: 0o600 });
    expect(() => resolveAuthSecret({ ...config, database: { kind: 'sqlite', file: join(other, 'x.db') } })).toThrow(/shorter than 32 bytes/);
    rmSync(other, { recursive: true, force: true });
  });

  it('the configured one wins, and production never generates one', () => {
    expect(resolveAuthSecret({ ...config, authSecret: 'y'.repeat(40) })).toEqual({ secret: 'y'.repeat(40), source: 'environment' });
    expect(() => resolveAuthSecret({ ...config, isProduction: true })).toThrow(/AUTH_SECRET/);
    expect(readFileSync(secretFilePath(config), 'utf8').trim()).toHaveLength(64);
  });

  it.runIf(testBackend === 'sqlite')('tokens survive a restart of a service that generated its secret', async () => {
    const appDir = mkdtempSync(join(tmpdir(), 'inkwell-restart-'));
    const env = {
      DATABASE_URL: `file:${join(appDir, 'inkwell.db')}`,
      BCRYPT_COST: '4',
      LOG_LEVEL: 'silent',
      SEED_DEMO_DATA: 'never',
      HOST: '127.0.0.1',
      PORT: '0',
    };
    const start = async () => {
      const inkwell = await buildInkwell(loadConfig(env));
      await inkwell.app.listen({ port: 0, host: '127.0.0.1' });
      return { inkwell, url: `http://127.0.0.1:${(inkwell.app.server.address() as { port: number }).port}` };
    };
    const first = await start();
    const email = uniqueEmail('restart');
    await register(first.url, email);
    const session = await login(first.url, email);
    await first.inkwell.close();
    expect(statSync(join(appDir, 'auth-secret')).mode & 0o777).toBe(0o600);

    const second = await start();
    expect((await fetch(`${second.url}/api/me`, { headers: bearer(session.accessToken) })).status).toBe(200);
    await second.inkwell.close();
    rmSync(appDir, { recursive: true, force: true });
  });
});
