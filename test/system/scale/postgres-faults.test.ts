import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { query, startPostgres, type PostgresCluster } from '../../helpers/postgres.js';
import { eventually, startInstance, type Instance } from './instances.js';

/**
 * docs/operations.md ("When PostgreSQL is down"): `/readyz` answers 503 while the database does not answer, requests
 * fail with a clean error, and everything recovers by itself once it is back. No
 * acknowledged write is lost: writers run throughout, PostgreSQL crashes (immediate
 * shutdown, no checkpoint) under them, and every write that was answered with success
 * is there afterwards. A PostgreSQL cluster of this file's own; a production instance,
 * so errors are masked as they would be for real clients.
 */
let cluster: PostgresCluster;
let instance: Instance;
let databaseUrl: string;
let token: { authorization: string };

beforeAll(async () => {
  cluster = await startPostgres({ durable: true });
  databaseUrl = await cluster.createDatabase('inkwell_faults');
  instance = await startInstance('A', {
    NODE_ENV: 'production',
    BCRYPT_COST: '10',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: '4',
    REDIS_URL: inject('redisUrl'),
    REDIS_KEY_PREFIX: 'pg-faults:',
    PUBLIC_URL: 'http://127.0.0.1:8080',
  });
  const email = 'writer@example.test';
  const registered = await instance.post('/api/auth/register', { name: 'Writer', email, password: 'a long enough password' });
  expect(registered.status).toBe(201);
  await query(databaseUrl, "update users set role = 'editor' where email = $1", [email]);
  const login = await instance.post('/api/auth/login', { email, password: 'a long enough password' });
  expect(login.status).toBe(200);
  token = { authorization: `Bearer ${login.body.accessToken as string}` };
});

afterAll(async () => {
  const code = await instance?.stop();
  await cluster?.destroy();
  if (code !== 0) console.error(instance?.stderr(), instance?.logs.filter((l) => Number(l.level) >= 40).slice(-5));
  expect(code).toBe(0);
});

const addBook = 'mutation ($title: String!) { addBook(title: $title, author: "Fault Tester") { id title } }';

/** No internals in an answer: no SQL, no driver or network messages, no stack. */
function expectClean(body: unknown) {
  expect(JSON.stringify(body)).not.toMatch(/ECONNREFUSED|terminat|postgres|SELECT|INSERT|stack|node_modules|\.ts:\d|connect /i);
}

it('crashes under load: 503 from /readyz, clean errors, recovery, and no acknowledged write lost', async () => {
  const acknowledged: string[] = [];
  const failures: { status: number; body: any }[] = [];
  let writing = true;
  let n = 0;
  const writer = async () => {
    while (writing) {
      const title = `book ${++n}`;
      const res = await instance.gql(addBook, { title }, { headers: token }).catch(() => undefined);
      if (!res) continue;
      if (res.status === 200 && res.body.data?.addBook?.id) acknowledged.push(res.body.data.addBook.id as string);
      else failures.push(res);
      if (failures.length > 0) await new Promise((r) => setTimeout(r, 20)); // no busy loop while down
    }
  };
  const writers = [writer(), writer(), writer()];
  await eventually(() => acknowledged.length >= 30, 15_000, 'writes before the crash');

  await cluster.stop('immediate');
  const acknowledgedBeforeCrash = acknowledged.length;
  await eventually(async () => (await instance.get('/readyz')).status === 503, 10_000, '/readyz to fail');
  expect((await instance.get('/readyz')).body).toEqual({ status: 'degraded', database: 'down', redis: 'up' });
  expect((await instance.get('/healthz')).status).toBe(200);

  // Requests fail cleanly and promptly while the database is down.
  await eventually(() => failures.length >= 3, 10_000, 'failed writes');
  const started = Date.now();
  const read = await instance.gql('{ books(limit: 1) { id } }');
  expect(Date.now() - started).toBeLessThan(6_000);
  expect(read.body.errors?.[0]?.extensions?.code).toBe('INTERNAL_ERROR');
  expect(read.body.errors?.[0]?.message).toBe('Internal server error');
  expectClean(read.body);
  if (process.env.TEST_LOG_LEVEL) console.log(failures.slice(0, 3).map((f) => JSON.stringify(f.body)), acknowledged.length);
  for (const failure of failures.slice(0, 20)) {
    expect(failure.status).toBeLessThan(600);
    expectClean(failure.body);
  }

  await cluster.start();
  await eventually(async () => (await instance.get('/readyz')).status === 200, 20_000, '/readyz to recover');
  expect((await instance.get('/readyz')).body).toEqual({ status: 'ok', database: 'up', redis: 'up' });
  const recovered = acknowledged.length;
  await eventually(() => acknowledged.length > recovered + 10, 15_000, 'writes after recovery');
  writing = false;
  await Promise.all(writers);

  expect(acknowledgedBeforeCrash).toBeGreaterThanOrEqual(30);
  const { rows } = await query(databaseUrl, 'select id from books');
  const stored = new Set(rows.map((r) => r.id as string));
  const lost = acknowledged.filter((id) => !stored.has(id));
  expect(lost).toEqual([]);
});
