import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERPRETED_EXECUTIONS } from '../../../src/graphql/operation/executable.js';
import { sha256Hex } from '../../../src/graphql/operation/persisted.js';
import { startServer, testBackend, type TestServer } from '../../helpers/server.js';

/**
 * In-process stores are bounded in bytes (docs/limits.md, "Memory"):
 * a flood of large persisted documents keeps at most PERSISTED_QUERIES_MB in this
 * process, and the parsed-document cache keeps neither padded documents nor more than
 * its budget of costly ones. Heap is read after full collections in this process,
 * which runs the server.
 */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

const MB = 1024 * 1024;
const pq = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256Hex(query) } });

/** A valid document padded with a comment to `chars` characters, distinct per (tag, i). */
function padded(tag: string, i: number, chars: number): string {
  const head = `query ${tag}${i} { books(limit: 1) { title } }\n#`;
  return head + 'x'.repeat(chars - head.length);
}

/** POSTs the hash alone. */
async function hashOnly(server: TestServer, query: string) {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ extensions: pq(query) }),
  });
  return (await response.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] };
}

const notFound = (body: Awaited<ReturnType<typeof hashOnly>>) => body.errors?.[0]?.extensions?.code === 'PERSISTED_QUERY_NOT_FOUND';

describe('persisted queries: PERSISTED_QUERIES_MB=2', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ PERSISTED_QUERIES_MB: '2' });
  });
  afterAll(() => server.close());

  // 24 documents of 100,000 characters: 200 KB each as counted, so about 10 fit in 2 MiB.
  const documents = Array.from({ length: 24 }, (_, i) => padded('Budget', i, 100_000));

  it('registers every document, and keeps only the budget of them in this process (least recently used dropped)', async () => {
    for (const query of documents) {
      const registered = await server.gql(query, undefined, { extensions: pq(query) });
      expect(registered.status).toBe(200);
      expect(registered.body.data).toEqual({ books: [] });
    }
    const served = [];
    for (const query of documents) served.push(!notFound(await hashOnly(server, query)));
    if (testBackend === 'sqlite') {
      // The oldest went to make room; the most recent are served by their hash.
      expect(served.slice(0, 8)).toEqual(Array(8).fill(false));
      expect(served.slice(-6)).toEqual(Array(6).fill(true));
    } else {
      // With Redis every document stays there, with its TTL (7 days).
      expect(served).toEqual(Array(documents.length).fill(true));
      const redis = new Redis(process.env.INKWELL_TEST_REDIS_URL!);
      try {
        const ttl = await redis.pttl(`${server.inkwell.config.redisKeyPrefix}kv:apq:${sha256Hex(documents[0]!)}`);
        expect(ttl).toBeGreaterThan(6 * 24 * 3600 * 1000);
        expect(ttl).toBeLessThanOrEqual(7 * 24 * 3600 * 1000);
      } finally {
        redis.disconnect();
      }
    }
  });

  it('runs a document larger than an eighth of the budget but does not register it, and it evicts nothing', async () => {
    const huge = padded('Huge', 0, 1_000_000);
    const ran = await server.gql(huge, undefined, { extensions: pq(huge) });
    expect(ran.status).toBe(200);
    expect(ran.body.data).toEqual({ books: [] });
    // The client gets PERSISTED_QUERY_NOT_FOUND for the hash alone and sends the text again.
    expect(notFound(await hashOnly(server, huge))).toBe(true);
    expect(notFound(await hashOnly(server, documents.at(-1)!))).toBe(false);
  });
});

describe.runIf(testBackend === 'sqlite')('persisted queries: the 1 MB flood at the default budget (16 MiB)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it('keeps the heap within the budget after 48 registered documents of 1 MB', async () => {
    await server.gql('{ books(limit: 1) { title } }');
    const before = heapAfterGc();
    for (let i = 0; i < 48; i++) {
      const query = padded('Flood', i, 1_000_000);
      expect((await server.gql(query, undefined, { extensions: pq(query) })).status).toBe(200);
    }
    const grown = heapAfterGc() - before;
    // Unbounded it was ~48 MB (every document kept for 7 days); 16 MiB as counted is ~8 of them.
    expect(grown).toBeLessThan(24 * MB);
  });
});

// The parsed-document cache lives in the process whatever the backend: SQLite only.
describe.runIf(testBackend === 'sqlite')('the parsed-document cache, PERSISTED_QUERIES=off', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ PERSISTED_QUERIES: 'off' });
  });
  afterAll(() => server.close());

  it('executes documents padded to 1 MB without keeping them', async () => {
    await server.gql('{ books(limit: 1) { title } }');
    const before = heapAfterGc();
    for (let i = 0; i < 48; i++) {
      const result = await server.gql(padded('Padded', i, 1_000_000));
      expect(result.status).toBe(200);
      expect(result.body.data).toEqual({ books: [] });
    }
    // Kept by their text length only, ~31 of them stayed (~31 MB); now none does.
    expect(heapAfterGc() - before).toBeLessThan(12 * MB);
    expect(server.inkwell.pipeline.cachedBytes).toBeLessThan(MB);
  });

  it('compiles an operation after its first executions: until then, it holds its text and AST only', async () => {
    const query = `query Repeated { posts(limit: 1) { ${Array.from(
      { length: 30 },
      (_, k) => `t${k}: author { id name email age avatar role postsCount createdAt posts(limit: 1) { id title content published tags } }`,
    ).join(' ')} } }`;
    const before = server.inkwell.pipeline.cachedBytes;
    // A variable the response cache keys on (and execution ignores): each request executes.
    const first = await server.gql(query, { run: 0 });
    for (let run = 1; run < INTERPRETED_EXECUTIONS; run++) expect((await server.gql(query, { run })).status).toBe(200);
    const interpreted = server.inkwell.pipeline.cachedBytes - before;
    const compiled = await server.gql(query, { run: INTERPRETED_EXECUTIONS });
    const after = server.inkwell.pipeline.cachedBytes - before;
    expect(first.status).toBe(200);
    expect(compiled.body.data).toEqual(first.body.data);
    expect(interpreted).toBeLessThan(MB);
    expect(after).toBeGreaterThan(2 * MB);
  });

  it('counts what a costly document holds compiled, and keeps no more than its budget', async () => {
    // 3.6 KB each, and ~2.4 MB each once compiled (30 aliases of 14 fields).
    const costly = (i: number) =>
      `query Costly${i} { posts(limit: 1) { ${Array.from(
        { length: 30 },
        (_, k) => `a${k}_${i}: author { id name email age avatar role postsCount createdAt posts(limit: 1) { id title content published tags } }`,
      ).join(' ')} } }`;
    // Executed until compiled (a variable the response cache keys on makes each request execute).
    for (let i = 0; i < 40; i++) {
      for (let run = 0; run <= INTERPRETED_EXECUTIONS; run++) expect((await server.gql(costly(i), { run })).status).toBe(200);
    }
    const bytes = server.inkwell.pipeline.cachedBytes;
    // At least 2 MB counted per document (its text alone is 3.6 KB), 64 MiB at most in all.
    expect(bytes).toBeGreaterThan(20 * 2 * MB);
    expect(bytes).toBeLessThanOrEqual(64 * MB);
  });
});
