import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/graphql/operation/persisted.js';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * Apollo automatic persisted queries over POST and GET, and PERSISTED_QUERIES=only
 * with a trusted-documents manifest.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
});
afterAll(() => server.close());

const pq = (hash: string, version: unknown = 1) => ({ persistedQuery: { version, sha256Hash: hash } });

async function getApq(target: TestServer, hash: string, params: Record<string, string> = {}) {
  const search = new URLSearchParams({ ...params, extensions: JSON.stringify(pq(hash)) });
  const response = await fetch(`${target.url}/graphql?${search}`, { headers: { accept: 'application/graphql-response+json' } });
  return { status: response.status, body: (await response.json()) as any };
}

/** A POST without `query`, only the hash. */
async function postHashOnly(target: TestServer, hash: string, variables?: Record<string, unknown>) {
  const response = await fetch(`${target.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
    body: JSON.stringify({ variables, extensions: pq(hash) }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

/** A distinct, valid document per test so registrations never overlap. */
let counter = 0;
const freshQuery = () => `query Fresh${++counter} { books(limit: 2) { title } }`;

describe('automatic persisted queries', () => {
  it('answers PERSISTED_QUERY_NOT_FOUND for an unknown hash, over POST and GET', async () => {
    const hash = sha256Hex(freshQuery());
    for (const res of [await postHashOnly(server, hash), await getApq(server, hash)]) {
      expect(res.body).not.toHaveProperty('data');
      expect(res.body.errors).toEqual([{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }]);
      // Apollo clients retry with the full text on this answer; it is not a server fault.
      expect(res.status).toBe(200);
    }
  });

  it('registers text sent with its hash over POST, then serves the hash alone over POST and GET', async () => {
    const query = freshQuery();
    const hash = sha256Hex(query);
    const first = await server.gql(query, undefined, { extensions: pq(hash) });
    expect(first.status).toBe(200);
    expect((first.body.data as { books: unknown[] }).books).toHaveLength(2);
    const byPost = await postHashOnly(server, hash);
    expect({ ...byPost, body: withoutCost(byPost.body) }).toEqual({ status: 200, body: withoutCost(first.body) });
    const byGet = await getApq(server, hash);
    expect({ ...byGet, body: withoutCost(byGet.body) }).toEqual({ status: 200, body: withoutCost(first.body) });
  });

  it('registers over GET too (query and hash in the query string)', async () => {
    const query = freshQuery();
    const hash = sha256Hex(query);
    expect((await getApq(server, hash)).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    const registered = await getApq(server, hash, { query });
    expect(registered.status).toBe(200);
    expect(registered.body.data.books).toHaveLength(2);
    const again = await postHashOnly(server, hash);
    // The same answer; its cost report says what was left at the time of each.
    expect({ status: again.status, body: withoutCost(again.body) }).toEqual({ status: registered.status, body: withoutCost(registered.body) });
  });

  it('runs a persisted query with variables and an operationName', async () => {
    const query = `query A${++counter}($n: Int!) { books(limit: $n) { id } } query B${counter} { __typename }`;
    const hash = sha256Hex(query);
    const first = await server.gql(query, { n: 3 }, { extensions: pq(hash), operationName: `A${counter}` });
    expect(first.status).toBe(200);
    const again = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ variables: { n: 1 }, operationName: `A${counter}`, extensions: pq(hash) }),
    });
    expect(((await again.json()) as any).data.books).toHaveLength(1);
  });

  it('refuses a hash that does not match the text with 400, and runs nothing', async () => {
    const query = freshQuery();
    const wrong = sha256Hex(query + ' ');
    const before = server.inkwell.backends.db.queryCount;
    const res = await server.gql(query, undefined, { extensions: pq(wrong) });
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
    expect(res.body.errors![0]!.extensions?.code).toBe('BAD_REQUEST');
    expect(server.inkwell.backends.db.queryCount).toBe(before);
    // Nothing was stored under either hash.
    expect((await postHashOnly(server, wrong)).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('refuses a mismatching hash over GET with 400', async () => {
    const query = freshQuery();
    const res = await getApq(server, sha256Hex('something else'), { query });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it.each([
    ['a short hash', pq('abc123')],
    ['an upper-case hash', pq(sha256Hex('{ __typename }').toUpperCase())],
    ['version 2', pq(sha256Hex('{ __typename }'), 2)],
    ['a missing version', { persistedQuery: { sha256Hash: sha256Hex('{ __typename }') } }],
    ['a string extension', { persistedQuery: 'yes' }],
    ['a non-string hash', { persistedQuery: { version: 1, sha256Hash: 42 } }],
  ])('refuses %s with 400', async (_what, extensions) => {
    const res = await server.gql('{ __typename }', undefined, { extensions });
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
    expect(res.body.errors![0]!.extensions?.code).toBe('BAD_REQUEST');
  });

  it('does not register a document that fails validation', async () => {
    const query = '{ books { nope } }';
    const hash = sha256Hex(query);
    const res = await server.gql(query, undefined, { extensions: pq(hash) });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect((await postHashOnly(server, hash)).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('does not register a document refused by the limits', async () => {
    const query = '{ users(limit: 100) { posts(limit: 10) { author { name } } } }';
    const hash = sha256Hex(query);
    expect((await server.gql(query, undefined, { extensions: pq(hash) })).body.errors![0]!.extensions?.code).toBe('MAX_COMPLEXITY');
    expect((await postHashOnly(server, hash)).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it('refuses a persisted mutation over GET with 405', async () => {
    const mutation = 'mutation { addBook(title: "T", author: "A") { id } }';
    const hash = sha256Hex(mutation);
    const registered = await server.gql(mutation, undefined, { extensions: pq(hash) });
    expect(registered.status).toBe(200); // ran (anonymously: UNAUTHENTICATED), and so registered
    expect(registered.body.errors![0]!.extensions?.code).toBe('UNAUTHENTICATED');
    const res = await getApq(server, hash);
    expect(res.status).toBe(405);
    expect(res.body.errors[0].extensions.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('applies the limits to a document served by hash', async () => {
    // Registered with a small limit, replayed with variables that make it too costly.
    const query = `query Cost${++counter}($n: Int!) { users(limit: $n) { posts(limit: 10) { id } } }`;
    const hash = sha256Hex(query);
    expect((await server.gql(query, { n: 1 }, { extensions: pq(hash) })).status).toBe(200);
    const res = await postHashOnly(server, hash, { n: 100 });
    expect(res.status).toBe(400);
    expect(res.body.errors[0].extensions.code).toBe('MAX_COMPLEXITY');
  });
});

describe('PERSISTED_QUERIES=only (trusted documents)', () => {
  let only: TestServer;
  let dir: string;
  const allowed = '{ books(limit: 1) { title } }';
  const allowedHash = sha256Hex(allowed);

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'inkwell-manifest-'));
    const manifest = join(dir, 'manifest.json');
    writeFileSync(manifest, JSON.stringify({ [allowedHash]: allowed }));
    only = await startServer({ SEED_DEMO_DATA: 'auto', PERSISTED_QUERIES: 'only', PERSISTED_QUERIES_MANIFEST: manifest });
  });
  afterAll(async () => {
    await only?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses text that is not registered', async () => {
    const before = only.inkwell.backends.db.queryCount;
    const res = await only.gql('{ books(limit: 2) { title } }');
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
    expect(res.body.errors![0]!.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect(only.inkwell.backends.db.queryCount).toBe(before);
  });

  it('refuses unregistered text sent with its correct hash, and does not register it', async () => {
    const query = '{ users(limit: 1) { name } }';
    const hash = sha256Hex(query);
    const res = await only.gql(query, undefined, { extensions: pq(hash) });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect((await postHashOnly(only, hash)).body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    expect((await only.gql(query)).status).toBe(400);
  });

  it('serves the manifest: as plain text, by hash over POST and GET, and as text with its hash', async () => {
    const expected = { data: { books: [{ title: expect.any(String) }] } };
    const text = await only.gql(allowed);
    expect(text.status).toBe(200);
    expect(withoutCost(text.body)).toEqual(expected);
    const byHash = await postHashOnly(only, allowedHash);
    expect({ ...byHash, body: withoutCost(byHash.body) }).toEqual({ status: 200, body: withoutCost(text.body) });
    const byGet = await getApq(only, allowedHash);
    expect({ ...byGet, body: withoutCost(byGet.body) }).toEqual({ status: 200, body: withoutCost(text.body) });
    expect(withoutCost((await only.gql(allowed, undefined, { extensions: pq(allowedHash) })).body)).toEqual(withoutCost(text.body));
  });

  it('refuses a mismatching hash with 400', async () => {
    const res = await only.gql(allowed, undefined, { extensions: pq(sha256Hex('other')) });
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.extensions?.code).toBe('BAD_REQUEST');
  });

  it('refuses to start with a manifest entry whose hash does not match its text', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ [sha256Hex('{ a }')]: '{ b }' }));
    await expect(startServer({ PERSISTED_QUERIES: 'only', PERSISTED_QUERIES_MANIFEST: bad })).rejects.toThrow(/does not match/);
  });
});

describe('PERSISTED_QUERIES=off', () => {
  it('ignores hashes: text runs, a hash alone is a missing query', async () => {
    const off = await startServer({ PERSISTED_QUERIES: 'off' });
    try {
      const res = await off.gql('{ __typename }', undefined, { extensions: pq(sha256Hex('not this')) });
      expect(withoutCost(res.body)).toEqual({ data: { __typename: 'Query' } });
      const hashOnly = await postHashOnly(off, sha256Hex('{ __typename }'));
      expect(hashOnly.status).toBe(400);
      expect(hashOnly.body.errors[0].extensions.code).toBe('BAD_REQUEST');
    } finally {
      await off.close();
    }
  });
});
