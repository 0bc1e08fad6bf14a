import bcrypt from 'bcrypt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PasswordHasher, costOf, passwordProblem } from '../../src/auth/passwords.js';
import { loadConfig } from '../../src/config.js';
import { parseScrape } from '../observability/prometheus.js';
import type { TestServer } from '../helpers/server.js';
import { PASSWORD, json, login, register, startServerAt, uniqueEmail } from './helpers.js';

describe('password rules', () => {
  it.each([
    ['', 'required'],
    ['1234567', 'at least 8'],
    ['ab\u0000cdefgh', 'NUL'],
    ['a'.repeat(73), 'at most 72 bytes'],
    ['€'.repeat(25), 'at most 72 bytes'],
  ])('refuses %j', (password, problem) => {
    expect(passwordProblem(password)).toContain(problem);
  });

  it.each(['12345678', 'a'.repeat(72), '€'.repeat(24), '🙂🙂🙂🙂🙂🙂🙂🙂', 'pass word with spaces'])('accepts %j', (password) => {
    expect(passwordProblem(password)).toBeNull();
  });

  it('counts characters as code points (eight emoji are eight characters)', () => {
    expect(passwordProblem('🙂'.repeat(7))).toContain('at least 8');
  });
});

describe('hashing', () => {
  it('the default cost is 12: loadConfig({}) and a hash made with it ($2b$12$)', async () => {
    const config = loadConfig({});
    expect(config.bcryptCost).toBe(12);
    const hash = await new PasswordHasher(config.bcryptCost).hash(PASSWORD);
    expect(hash.startsWith('$2b$12$')).toBe(true);
    expect(costOf(hash)).toBe(12);
  });

  it('BCRYPT_CONCURRENCY is optional (default: the number of cores) and at least 1', () => {
    expect(loadConfig({}).bcryptConcurrency).toBeUndefined();
    expect(loadConfig({ BCRYPT_CONCURRENCY: '3' }).bcryptConcurrency).toBe(3);
    expect(() => loadConfig({ BCRYPT_CONCURRENCY: '0' })).toThrow(/BCRYPT_CONCURRENCY/);
  });

  it('a cost below 10 is refused in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(32), BCRYPT_COST: '9' })).toThrow(/BCRYPT_COST/);
    expect(loadConfig({ NODE_ENV: 'production', AUTH_SECRET: 'x'.repeat(32), BCRYPT_COST: '10' }).bcryptCost).toBe(10);
  });

  it('never lets bcrypt truncate: a longer password does not match a 72-byte one', async () => {
    const hasher = new PasswordHasher(4);
    const long = 'x'.repeat(72);
    const hash = await hasher.hash(long);
    // bcrypt itself would say yes:
    expect(await bcrypt.compare(`${long}and more`, hash)).toBe(true);
    // we say no:
    expect(await hasher.verify(`${long}and more`, hash)).toBe(false);
    expect(await hasher.verify(long, hash)).toBe(true);
    expect(await hasher.verify(`${long.slice(0, 8)}\u0000${long.slice(9)}`, hash)).toBe(false);
  });

  it('compares with a dummy hash when there is no hash, and never matches', async () => {
    const hasher = new PasswordHasher(4);
    expect(await hasher.verify(PASSWORD, undefined)).toBe(false);
    expect(await hasher.verify(PASSWORD, null)).toBe(false);
  });

  it('asks for a re-hash only below the configured cost', async () => {
    const hasher = new PasswordHasher(6);
    expect(hasher.needsRehash(await bcrypt.hash('x', 4))).toBe(true);
    expect(hasher.needsRehash(await bcrypt.hash('x', 6))).toBe(false);
    expect(hasher.needsRehash(await bcrypt.hash('x', 7))).toBe(false);
    expect(hasher.needsRehash('not a bcrypt hash')).toBe(true);
  });
});

describe('over the wire', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServerAt({ BCRYPT_COST: '5' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('stores only a bcrypt hash at the configured cost', async () => {
    const email = uniqueEmail('hash');
    await register(s.url, email);
    const account = await s.inkwell.services.users.findByEmail(email);
    expect(account?.passwordHash).toMatch(/^\$2b\$05\$/);
    expect(account?.passwordHash).not.toContain(PASSWORD);
  });

  it('refuses, at login, a password sharing the first 72 bytes of the real one', async () => {
    const email = uniqueEmail('trunc');
    const password = 'y'.repeat(72);
    await register(s.url, email, password);
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: `${password}z` }))).status).toBe(401);
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password }))).status).toBe(200);
  });

  it('treats emails trimmed and lower-cased everywhere', async () => {
    const email = uniqueEmail('Case');
    await register(s.url, `  ${email.toUpperCase()} `);
    expect((await login(s.url, email.toLowerCase())).userId).toBeTruthy();
    expect((await fetch(`${s.url}/api/auth/login`, json({ email: ` ${email.toUpperCase()}`, password: PASSWORD }))).status).toBe(200);
  });

  it('re-hashes a hash of a lower cost at the next successful login', async () => {
    const email = uniqueEmail('old');
    const { id } = await register(s.url, email);
    await s.inkwell.services.users.setPasswordHash(id, await bcrypt.hash(PASSWORD, 4));
    // A failed login changes nothing.
    expect((await fetch(`${s.url}/api/auth/login`, json({ email, password: 'wrong password' }))).status).toBe(401);
    expect((await s.inkwell.services.users.findByEmail(email))?.passwordHash).toMatch(/^\$2b\$04\$/);
    await login(s.url, email);
    const after = (await s.inkwell.services.users.findByEmail(email))?.passwordHash;
    expect(after).toMatch(/^\$2b\$05\$/);
    expect(await bcrypt.compare(PASSWORD, after!)).toBe(true);
    await login(s.url, email);
  });

  it('an account without a password (external only) cannot sign in with one', async () => {
    const user = await s.inkwell.services.users.insertAccount({ name: 'External', email: uniqueEmail('ext'), passwordHash: null });
    expect((await fetch(`${s.url}/api/auth/login`, json({ email: user.email, password: PASSWORD }))).status).toBe(401);
  });
});

describe('timing', () => {
  let s: TestServer;
  beforeAll(async () => {
    // Cost 10 (~60 ms per comparison here), so a missing comparison would stand out.
    s = await startServerAt({ BCRYPT_COST: '10' });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('an unknown email costs what a wrong password costs: one bcrypt comparison each, taking as long', async () => {
    const email = uniqueEmail('timed');
    await register(s.url, email);
    const compares = async () =>
      parseScrape(await (await fetch(`${s.url}/metrics`)).text()).value('inkwell_password_operations_total', { operation: 'compare' });
    // The CPU time this process spends on the request (the service runs in it, its hashing
    // threads too), not the time the client waits: a hashing thread runs at the lowest
    // priority, so on a busy machine its wait is mostly for a free core.
    const time = async (body: object) => {
      const before = process.cpuUsage();
      const response = await fetch(`${s.url}/api/auth/login`, json(body));
      expect(response.status).toBe(401);
      const used = process.cpuUsage(before);
      return used.user + used.system;
    };
    await time({ email: uniqueEmail('warm'), password: 'warm-up' }); // makes the dummy hash
    const known: number[] = [];
    const unknown: number[] = [];
    let before = await compares();
    // Interleaved, so load on the machine hits both alike; each email stays under the throttle.
    for (let i = 0; i < 8; i++) {
      known.push(await time({ email, password: `wrong ${i}` }));
      unknown.push(await time({ email: uniqueEmail('nobody'), password: `wrong ${i}` }));
    }
    // The work itself, counted: sixteen failures, sixteen comparisons, whoever asked.
    expect((await compares()) - before).toBe(16);
    before = await compares();
    await time({ email: uniqueEmail('nobody'), password: 'wrong' });
    expect((await compares()) - before).toBe(1);
    // And the work each costs. The least of each kind is compared: without the dummy
    // comparison an unknown email would cost a millisecond or two of CPU, a small
    // fraction of a comparison at cost 10.
    expect(Math.min(...unknown) / Math.min(...known)).toBeGreaterThan(0.5);
    expect(Math.min(...unknown) / Math.min(...known)).toBeLessThan(2);
  });
});
