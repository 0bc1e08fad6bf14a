import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../../../src/db/connect.js';
import { pauseTree, type Paused } from '../../../helpers/pause.js';
import { query, startPostgres, type PostgresCluster } from '../../../helpers/postgres.js';
import { startRedis, type RedisServer } from '../../../helpers/redis.js';
import { eventually, randomIp, startInstance, type Answer, type Instance } from '../../scale/instances.js';

/**
 * A PostgreSQL that answers slowly or not at all (README, "Operations under failure"):
 * a lock held by someone else, a statement that runs long (`pg_sleep`), and a server
 * frozen with SIGSTOP (postmaster and backends: connections stay open, nothing is
 * answered). With DATABASE_STATEMENT_TIMEOUT_MS=1000 and a pool of 4, three times more
 * requests than connections all get a clean error in bounded time, `/readyz` answers 503
 * without hanging, and everything works again by itself once PostgreSQL does: the pool
 * never deadlocks. A cluster of this file's own; a production instance (masked errors).
 */
const STATEMENT_TIMEOUT_MS = 1_000;
const POOL = 4;
let cluster: PostgresCluster;
let databaseUrl: string;
let instance: Instance;
let editor: { authorization: string };
let paused: Paused | undefined;

let redis: RedisServer | undefined;

beforeAll(async () => {
  // A Redis of its own: other files of the project restart and flush the shared one.
  redis = await startRedis();
  cluster = await startPostgres();
  databaseUrl = await cluster.createDatabase('inkwell_slow');
  instance = await startInstance('slow-pg', {
    NODE_ENV: 'production',
    BCRYPT_COST: '10',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_SIZE: String(POOL),
    DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS),
    REDIS_URL: redis.url,
    PUBLIC_URL: 'http://127.0.0.1:8080',
    // Every read goes to the database (a cached answer would hide the stall).
    RESPONSE_CACHE_MB: '0',
  });
  const email = 'slow@example.test';
  expect((await instance.post('/api/auth/register', { name: 'Slow', email, password: 'a long enough password' })).status).toBe(201);
  await query(databaseUrl, "update users set role = 'editor' where email = $1", [email]);
  const login = await instance.post('/api/auth/login', { email, password: 'a long enough password' });
  editor = { authorization: `Bearer ${login.body.accessToken as string}` };
  for (let i = 0; i < 5; i++) {
    expect((await instance.gql('mutation ($t: String!) { addBook(title: $t, author: "Slow") { id } }', { t: `slow ${i}` }, { headers: editor })).body.errors).toBeUndefined();
  }
});

afterAll(async () => {
  paused?.resume();
  const code = await instance?.stop();
  await cluster?.destroy();
  await redis?.destroy();
  if (code !== 0) console.error(instance?.stderr());
  expect(code).toBe(0);
});

const read = '{ books(limit: 5) { id title } }';

interface Timed {
  answer: Answer;
  ms: number;
}

async function timed(request: () => Promise<Answer>): Promise<Timed> {
  const started = Date.now();
  const answer = await request();
  return { answer, ms: Date.now() - started };
}

/** A clean failure: INTERNAL_ERROR with the masked message, nothing about the database. */
function expectCleanFailure({ answer }: Timed) {
  expect([200, 500]).toContain(answer.status);
  expect(answer.body.errors?.[0]?.extensions?.code).toBe('INTERNAL_ERROR');
  expect(answer.body.errors?.[0]?.message).toBe('Internal server error');
  expect(JSON.stringify(answer.body)).not.toMatch(/timeout|cancel|statement|postgres|pg_|select|stack|\.ts:\d/i);
}

const burst = (n: number) => Promise.all(Array.from({ length: n }, () => timed(() => instance.gql(read, undefined, { ip: randomIp() }))));

describe('statements that run long', () => {
  it('a lock held elsewhere: three times the pool in requests fail cleanly after the statement timeout, then all succeed', async () => {
    const locker = new pg.Client({ connectionString: databaseUrl });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('lock table books in access exclusive mode');
      const answers = await burst(3 * POOL);
      if (process.env.TEST_LOG_LEVEL) console.log({ locked: answers.map((a) => a.ms) });
      for (const answer of answers) expectCleanFailure(answer);
      // Each waited for its statement (1 s) and perhaps for a connection: never the
      // 5 s connection wait, let alone forever.
      expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(5_000);
      expect(Math.min(...answers.map((a) => a.ms))).toBeGreaterThanOrEqual(STATEMENT_TIMEOUT_MS - 50);
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
    const after = await burst(3 * POOL);
    for (const { answer } of after) expect(answer.body.data?.books).toHaveLength(5);
  });

  it('writes held by a lock leave reads their connections: a read after three times the pool in writes is answered at once', async () => {
    const locker = new pg.Client({ connectionString: databaseUrl });
    await locker.connect();
    let settled = 0;
    let writes: Promise<Timed>[] = [];
    try {
      await locker.query('begin');
      // EXCLUSIVE: plain selects still run; every insert waits (as every commit does while the disk stalls).
      await locker.query('lock table books in exclusive mode');
      writes = Array.from({ length: 3 * POOL }, (_, i) =>
        timed(() => instance.gql('mutation ($t: String!) { addBook(title: $t, author: "Held") { id } }', { t: `held ${i}` }, { headers: editor, ip: randomIp() })).finally(
          () => settled++,
        ),
      );
      // Every writer's connection waits on the lock; the other writes wait for one of them.
      await eventually(async () => (await query(databaseUrl, "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like 'insert into \"books\"%'")).rows[0].n === POOL, 10_000, 'the writers to wait on the lock');

      const answer = await timed(() => instance.gql(read, undefined, { ip: randomIp() }));
      expect(answer.answer.body.data?.books).toHaveLength(5);
      expect(settled).toBe(0); // answered while every write still waited
    } finally {
      await locker.query('commit').catch(() => {});
      await locker.end();
    }
    // Released: each write is either added or (if it waited past the statement timeout) a clean failure.
    for (const write of await Promise.all(writes)) {
      if (write.answer.body.errors) expectCleanFailure(write);
      else expect(write.answer.body.data?.addBook.id).toEqual(expect.any(String));
    }
  });

  it('pg_sleep: PostgreSQL cancels the statement after the timeout; the connection is reused', async () => {
    const db = connectDatabase({ kind: 'postgres', url: databaseUrl, poolSize: 2, statementTimeoutMs: 500 });
    try {
      const started = Date.now();
      const sleeps = await Promise.allSettled([1, 2, 3].map(() => sql`select pg_sleep(10)`.execute(db.kysely)));
      for (const sleep of sleeps) {
        expect(sleep.status).toBe('rejected');
        expect((sleep as PromiseRejectedResult).reason.code).toBe('57014'); // query_canceled
      }
      // Two at a time on two connections: about two timeouts, not ten seconds.
      expect(Date.now() - started).toBeLessThan(3_000);
      await db.ping();
      const { rows } = await query(databaseUrl, "select count(*)::int as n from pg_stat_activity where query like '%pg_sleep(10)%' and state = 'active' and pid <> pg_backend_pid()");
      expect(rows[0].n).toBe(0);
    } finally {
      await db.close();
    }
  });
  it('a transaction left idle (its client frozen) is ended by PostgreSQL, releasing its locks', async () => {
    const db = connectDatabase({ kind: 'postgres', url: databaseUrl, poolSize: 1, statementTimeoutMs: 500 });
    try {
      const stuck = db.kysely.transaction().execute(async (trx) => {
        await sql`update books set year = 1 where author = 'Slow'`.execute(trx);
        await new Promise((r) => setTimeout(r, 1_500)); // the client stops talking, locks held
        await sql`select 1`.execute(trx);
      });
      await expect(stuck).rejects.toThrow();
      // The row locks are gone: another session updates the same rows at once.
      const { rowCount } = await query(databaseUrl, "update books set year = 2 where author = 'Slow'");
      expect(rowCount).toBe(5);
      // And the pool's one connection was replaced: the next statement works.
      await db.ping();
    } finally {
      await db.close();
    }
  });
});

describe('a frozen server (SIGSTOP)', () => {
  it('requests and /readyz fail cleanly in bounded time, more requests than connections; all resumes by itself', async () => {
    const postmaster = Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    paused = pauseTree(postmaster);
    expect(paused.pids.length).toBeGreaterThan(1);

    const [answers, write, ready, health] = await Promise.all([
      burst(3 * POOL),
      timed(() => instance.gql('mutation { addBook(title: "frozen", author: "Slow") { id } }', undefined, { headers: editor })),
      timed(() => instance.get('/readyz')),
      timed(() => instance.get('/healthz')),
    ]);
    // /readyz has its own 2 s deadline; /healthz does not touch the database.
    expect(ready.answer.status).toBe(503);
    expect(ready.answer.body).toEqual({ status: 'degraded', database: 'down', redis: 'up' });
    expect(ready.ms).toBeLessThan(4_000);
    expect(health.answer.status).toBe(200);
    for (const answer of [...answers, write]) expectCleanFailure(answer);
    // A statement gives up after 1 s + 1 s (client side); a connection, or a wait for
    // one, after 5 s: even a request that waited for both is answered in well under 15 s.
    const slowest = Math.max(...[...answers, write].map((a) => a.ms));
    expect(slowest).toBeLessThan(15_000);
    if (process.env.TEST_LOG_LEVEL) console.log({ frozen: answers.map((a) => a.ms), write: write.ms, readyz: ready.ms });

    // Still frozen: probes keep answering 503 in time (they do not pile up on the pool).
    const probes = await Promise.all([1, 2, 3].map(() => timed(() => instance.get('/readyz'))));
    for (const probe of probes) {
      expect(probe.answer.status).toBe(503);
      expect(probe.ms).toBeLessThan(4_000);
    }

    paused.resume();
    await eventually(async () => (await instance.get('/readyz')).status === 200, 20_000, '/readyz to recover');
    // The pool recovered: three times its size at once, all answered from the database.
    const after = await burst(3 * POOL);
    for (const { answer } of after) expect(answer.body.data?.books).toHaveLength(5);
    const written = await instance.gql('mutation { addBook(title: "thawed", author: "Slow") { id } }', undefined, { headers: editor });
    expect(written.body.errors).toBeUndefined();
  });
});
