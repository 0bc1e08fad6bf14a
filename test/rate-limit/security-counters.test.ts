import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromAddress, loopbackAddress, type AddressClient } from '../helpers/from-address.js';
import { testBackend, type TestServer } from '../helpers/server.js';
import { json, register, startServerAt, uniqueEmail } from '../auth/helpers.js';

/**
 * docs/limits.md ("Rate limits", "Failed logins"): security counters are never evicted by other traffic. A caller over
 * the sign-in throttle and a caller over the request limit stay over them while
 * thousands of other clients' requests (distinct loopback addresses) register distinct
 * persisted queries and read distinct posts: more distinct keys than any in-process
 * cache holds (the 50,000-entry store the counters once shared with the caches).
 */

const PER_CLIENT = 200;
// 60 clients × 30 requests × (30 posts + 1 persisted query): 55,800 new cache keys.
const FLOOD_CLIENTS = 60;
const REQUESTS_PER_CLIENT = 30;
const POSTS_PER_REQUEST = 30;
const FLOOD_POSTS = FLOOD_CLIENTS * REQUESTS_PER_CLIENT * POSTS_PER_REQUEST;
const AT_ONCE = 6;
const WINDOW_S = 15 * 60;

let server: TestServer;
beforeAll(async () => {
  // A day's window: nothing ends during the test, however slow the machine.
  server = await startServerAt({ RATE_LIMIT_MAX: String(PER_CLIENT), RATE_LIMIT_WINDOW_MS: '86400000' });
});
afterAll(async () => {
  await server?.close();
});

const wrongPassword = (email: string, i: number) => fetch(`${server.url}/api/auth/login`, json({ email, password: `wrong ${i}` }));

/** Published posts written straight to the database (54,000 through the API would take minutes). */
async function seedPosts(authorId: string): Promise<void> {
  const now = new Date().toISOString();
  await sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < ${FLOOD_POSTS - 1})
    insert into posts (id, author_id, title, content, published, tags, created_at, updated_at)
    select 'flood-' || cast(i as text), ${authorId}, 'flood', null, 1, null, ${now}, ${now} from n`.execute(server.inkwell.backends.db.kysely);
}

/**
 * Each client registers a persisted query of its own (one alias prefix per client) and
 * sends it by hash with new ids: every request reads 30 posts nobody read yet.
 */
async function flood(): Promise<void> {
  let next = 0;
  const client = async (index: number) => {
    const c = fromAddress(server.url, loopbackAddress(7, index));
    const ks = Array.from({ length: POSTS_PER_REQUEST }, (_, k) => k);
    const query = `query (${ks.map((k) => `$id${k}: ID!`).join(', ')}) { ${ks.map((k) => `c${index}p${k}: post(id: $id${k}) { id }`).join(' ')} }`;
    const persistedQuery = { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') };
    try {
      for (let r = 0; r < REQUESTS_PER_CLIENT; r++) {
        const first = (index * REQUESTS_PER_CLIENT + r) * POSTS_PER_REQUEST;
        const variables = Object.fromEntries(ks.map((k) => [`id${k}`, `flood-${first + k}`]));
        const res = await c.post('/graphql', { ...(r === 0 ? { query } : {}), variables, extensions: { persistedQuery } });
        expect(res.status, JSON.stringify({ client: c.address, request: r, headers: res.headers, body: res.json })).toBe(200);
        expect(res.json.data[`c${index}p0`]).toEqual({ id: `flood-${first}` });
      }
    } finally {
      c.close();
    }
  };
  await Promise.all(
    Array.from({ length: AT_ONCE }, async () => {
      while (next < FLOOD_CLIENTS) await client(next++);
    }),
  );
}

// What could evict a counter is an in-process store shared with the caches: the SQLite
// project's. With Redis the counters are Redis keys, and the test Redis evicts nothing
// (no maxmemory), so the flood could not fail there.
describe.runIf(testBackend === 'sqlite')('a flood of distinct keys from many clients', () => {
  it('leaves the sign-in throttle and the request count where they were', async () => {
    await seedPosts((await register(server.url, uniqueEmail('author'))).id);
    // The sign-in throttle: 10 wrong passwords, then 429.
    const email = uniqueEmail('flooded');
    const firstAttemptAt = Date.now();
    for (let i = 0; i < 10; i++) expect((await wrongPassword(email, i)).status).toBe(401);
    expect((await wrongPassword(email, 10)).status).toBe(429);

    // The request limit: one client spends its allowance.
    const spender: AddressClient = fromAddress(server.url, '127.0.0.2');
    try {
      for (let i = 0; i < PER_CLIENT; i++) expect((await spender.post('/graphql', { query: '{ __typename }' })).status).toBe(200);
      expect((await spender.post('/graphql', { query: '{ __typename }' })).status).toBe(429);

      await flood();

      const throttled = await wrongPassword(email, 11);
      const limited = await spender.post('/graphql', { query: '{ __typename }' });
      // Both at once, so a failure shows which counter was lost.
      expect({ signIn: throttled.status, requests: limited.status }).toEqual({ signIn: 429, requests: 429 });
      // The real wait: the first attempt leaves the window 15 minutes after it was made.
      const retryAfter = Number(throttled.headers.get('retry-after'));
      expect(retryAfter).toBeLessThanOrEqual(WINDOW_S);
      expect(retryAfter).toBeGreaterThanOrEqual(WINDOW_S - Math.ceil((Date.now() - firstAttemptAt) / 1000));
      expect(limited.json.errors[0].extensions.code).toBe('RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      spender.close();
    }
  }, 240_000);
});

describe('IPv6 clients', () => {
  it('are counted per /64: other addresses of one /64 share its count, the next /64 has its own', async () => {
    // Behind a proxy the address comes from X-Forwarded-For: a way to be IPv6 clients over loopback.
    const proxied = await startServerAt({ TRUST_PROXY: 'true', RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '86400000' });
    try {
      const from = (ip: string) => proxied.gql('{ __typename }', {}, { headers: { 'x-forwarded-for': ip } });
      expect((await from('2001:db8:1:2::1')).status).toBe(200);
      expect((await from('2001:db8:1:2:ffff:ffff:ffff:ffff')).status).toBe(200);
      expect((await from('2001:DB8:1:2:0:0:0:abcd')).status).toBe(200);
      expect((await from('2001:db8:1:2:1234::5')).status).toBe(429);
      expect((await from('2001:db8:1:3::1')).status).toBe(200);
    } finally {
      await proxied.close();
    }
  });
});
