import { NO_READS } from '../../src/cache/reads.js';
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import bcrypt from 'bcrypt';
import { DEMO_ACCOUNTS, DEMO_PASSWORD, seedDemoData } from '../../src/domain/seed.js';
import { ANONYMOUS } from '../../src/domain/caller.js';
import { createEnv, type TestEnv } from './helpers.js';

let env: TestEnv;

beforeEach(async () => {
  env = await createEnv();
});
afterEach(async () => {
  await env.close();
});

describe('seedDemoData', () => {
  it('fills an empty database once', async () => {
    expect(await seedDemoData(env.db, { bcryptCost: 4 })).toBe(true);
    expect(await seedDemoData(env.db, { bcryptCost: 4 })).toBe(false);

    const users = await env.services.users.list(ANONYMOUS, { limit: 100, offset: 0 });
    expect(users).toHaveLength(DEMO_ACCOUNTS.length);
    const roles = Object.fromEntries(users.map((u) => [u.email, u.role]));
    expect(roles).toMatchObject({
      'admin@inkwell.test': 'admin',
      'editor@inkwell.test': 'editor',
      'editor2@inkwell.test': 'editor',
      'alice@inkwell.test': 'user',
      'dave@inkwell.test': 'user',
    });
    // Distinct creation times: the order is deterministic.
    expect(new Set(users.map((u) => u.createdAt)).size).toBe(users.length);

    const k = env.db.kysely;
    const posts = await k.selectFrom('posts').select(['published', 'created_at', 'tags']).execute();
    expect(posts.length).toBeGreaterThanOrEqual(10);
    expect(posts.some((p) => p.published === 0)).toBe(true);
    expect(posts.some((p) => p.tags !== null)).toBe(true);
    expect(new Set(posts.map((p) => p.created_at)).size).toBe(posts.length);
    const reactions = await k.selectFrom('reactions').select(['type', 'user_id']).execute();
    expect(new Set(reactions.map((r) => r.type)).size).toBeGreaterThan(1);
    expect(new Set(reactions.map((r) => r.user_id)).size).toBeGreaterThan(2);
    expect((await env.services.books.list({ limit: 100, offset: 0 }, NO_READS)).length).toBeGreaterThanOrEqual(5);
  });

  it('every demo account signs in with the demo password', async () => {
    await seedDemoData(env.db, { bcryptCost: 4 });
    for (const account of DEMO_ACCOUNTS) {
      const found = await env.services.users.findByEmail(account.email);
      expect(found?.passwordHash, account.email).toBeTruthy();
      expect(await bcrypt.compare(DEMO_PASSWORD, found!.passwordHash!)).toBe(true);
    }
  });

  it('leaves a database with users alone', async () => {
    await env.services.users.insertAccount({ name: 'Someone', email: 'someone@example.test' });
    expect(await seedDemoData(env.db, { bcryptCost: 4 })).toBe(false);
    expect(await env.db.kysely.selectFrom('posts').select('id').execute()).toEqual([]);
  });
});
