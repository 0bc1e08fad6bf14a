import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * docs/limits.md over the wire, at the defaults (depth 7, complexity 1,000,
 * 2,000 tokens, 30 aliases), and with QUERY_MAX_DEPTH / QUERY_MAX_COMPLEXITY changed.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
});
afterAll(() => server.close());

/** users → posts → author → posts → … with `levels` fields in all (limits of 1 keep the cost low). */
function nested(levels: number): string {
  const path = ['users(limit: 1)'];
  while (path.length < levels - 1) path.push(path.length % 2 === 1 ? 'posts(limit: 1)' : 'author');
  const leaf = path[path.length - 1]!.startsWith('posts') ? 'id' : 'name';
  return '{ ' + path.map((f) => `${f} { `).join('') + leaf + ' }'.repeat(path.length) + ' }';
}

async function expectRefused(query: string, code: string, variables?: Record<string, unknown>, target = server) {
  const res = await target.gql(query, variables);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body).not.toHaveProperty('data');
  expect(res.body.errors!.map((e) => e.extensions?.code)).toContain(code);
  return res;
}

async function expectRuns(query: string, variables?: Record<string, unknown>, target = server) {
  const res = await target.gql(query, variables);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  expect(res.status).toBe(200);
  return res.body.data as any;
}

describe('depth', () => {
  it('counts the root field as level 1 (the docs/limits.md example has depth 4 and runs)', async () => {
    await expectRuns('{ users(limit: 2) { posts(limit: 2) { author { name } } } }');
  });

  it('runs depth 7', async () => {
    const data = await expectRuns(nested(7));
    expect(data.users).toHaveLength(1);
  });

  it('refuses depth 8 with MAX_DEPTH', async () => {
    await expectRefused(nested(8), 'MAX_DEPTH');
  });

  it('counts fragments where they are spread', async () => {
    const viaFragments = `
      query { users(limit: 1) { ...A } }
      fragment A on User { posts(limit: 1) { ...B } }
      fragment B on Post { author { posts(limit: 1) { author { posts(limit: 1) { ...C } } } } }
      fragment C on Post { id }`;
    await expectRuns(viaFragments); // 7 levels
    await expectRefused(viaFragments.replace('fragment C on Post { id }', 'fragment C on Post { author { id } }'), 'MAX_DEPTH');
    await expectRefused(
      '{ users(limit: 1) { ... on User { posts(limit: 1) { author { posts(limit: 1) { author { posts(limit: 1) { author { id } } } } } } } } }',
      'MAX_DEPTH',
    );
  });

  it('measures the selected operation only, yet refuses a document holding a too-deep one', async () => {
    const doc = `query Shallow { __typename } query Deep ${nested(8)}`;
    await expectRefused(doc, 'MAX_DEPTH');
  });

  it('does not count introspection against depth', async () => {
    await expectRuns('{ __schema { types { fields { type { ofType { ofType { ofType { ofType { ofType { name } } } } } } } } } }');
  });
});

describe('complexity', () => {
  it('runs the docs/limits.md example at the defaults (cost 420)', async () => {
    await expectRuns('{ users { posts { author { name } } } }');
  });

  it('refuses users(limit: 100) { posts(limit: 10) { author { name } } } (cost 2,100) with "Query too complex"', async () => {
    const res = await expectRefused('{ users(limit: 100) { posts(limit: 10) { author { name } } } }', 'MAX_COMPLEXITY');
    expect(res.body.errors![0]!.message).toBe('Query too complex');
  });

  it('runs a cost of exactly 1,000 and refuses 1,001', async () => {
    await expectRuns('{ users(limit: 100) { posts(limit: 9) { id } } }'); // 100 × (1 + 9) = 1000
    await expectRefused('{ users(limit: 91) { posts(limit: 10) { id } } }', 'MAX_COMPLEXITY'); // 91 × 11 = 1001
  });

  it('adds up sibling fields and aliases', async () => {
    await expectRuns('{ a: books(limit: 100) { id } b: books(limit: 100) { id } }');
    const ten = Array.from({ length: 11 }, (_, i) => `b${i}: books(limit: 100) { id }`).join(' ');
    await expectRefused(`{ ${ten} }`, 'MAX_COMPLEXITY'); // 1,100
  });

  it('takes limits from variables and their defaults', async () => {
    const q = 'query ($n: Int = 100) { users(limit: $n) { posts(limit: 10) { id } } }';
    await expectRefused(q, 'MAX_COMPLEXITY'); // 1,100 by default
    await expectRuns(q, { n: 10 }); // 110
    await expectRefused(q, 'MAX_COMPLEXITY', { n: 91 });
    // The same document again: a cached document still checks each request's variables.
    await expectRuns(q, { n: 2 });
  });

  it('counts fragments where they are spread, and skips @skip / @include(if: false) subtrees', async () => {
    await expectRefused('{ users(limit: 100) { ...P } } fragment P on User { posts(limit: 10) { id } }', 'MAX_COMPLEXITY');
    await expectRuns('{ users(limit: 100) @skip(if: true) { posts(limit: 10) { id } } }');
    const q = 'query ($big: Boolean!) { users(limit: 100) @include(if: $big) { posts(limit: 10) { id } } books { id } }';
    await expectRuns(q, { big: false });
    await expectRefused(q, 'MAX_COMPLEXITY', { big: true });
  });

  it('does not execute a refused operation', async () => {
    const before = server.inkwell.backends.db.queryCount;
    await expectRefused('{ users(limit: 100) { posts(limit: 10) { author { name } } } }', 'MAX_COMPLEXITY');
    expect(server.inkwell.backends.db.queryCount).toBe(before);
  });
});

describe('tokens and aliases', () => {
  /**
   * 400 operations of 5 tokens each (`query Qn { __typename }`) = 2,000 tokens; `extra`
   * more `__typename`s in the first. Many operations, because 2,000 copies of one field
   * in one selection set trip graphql-js's own overlap-validation budget instead.
   */
  const ofTokens = (extra: number) =>
    Array.from({ length: 400 }, (_, i) => `query Q${i} { __typename${i === 0 ? ' __typename'.repeat(extra) : ''} }`).join('\n');

  it('runs a document of 2,000 tokens and refuses 2,001 with MAX_COMPLEXITY', async () => {
    const res0 = await server.gql(ofTokens(0), undefined, { operationName: 'Q399' });
    expect(res0.status, JSON.stringify(res0.body)).toBe(200);
    expect(withoutCost(res0.body)).toEqual({ data: { __typename: 'Query' } });
    const res = await server.gql(ofTokens(1), undefined, { operationName: 'Q399' });
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
    expect(res.body.errors).toEqual([{ message: 'Query too complex', extensions: { code: 'MAX_COMPLEXITY' } }]);
  });

  it('refuses a huge document quickly, before parsing', async () => {
    const started = performance.now();
    await expectRefused(`{ ${'__typename '.repeat(90_000)}}`, 'MAX_COMPLEXITY');
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('does not count comments as tokens', async () => {
    await expectRuns(`# ${'x '.repeat(5000)}\n{ __typename }`);
  });

  const aliased = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: __typename`).join(' ')} }`;

  it('runs 30 aliases and refuses 31 with MAX_COMPLEXITY', async () => {
    const data = await expectRuns(aliased(30));
    expect(Object.keys(data)).toHaveLength(30);
    const res = await expectRefused(aliased(31), 'MAX_COMPLEXITY');
    expect(res.body.errors![0]!.message).toBe('Query too complex');
  });

  it('counts aliases inside fragments where they are spread', async () => {
    const fields = Array.from({ length: 16 }, (_, i) => `t${i}: title`).join(' ');
    await expectRefused(`{ a: books(limit: 1) { ...F } b: books(limit: 1) { ...F } } fragment F on Book { ${fields} }`, 'MAX_COMPLEXITY');
  });
});

/**
 * Fragments that spread each other under aliases, every list at `limit: 0`: cost 0, but
 * 1,965 fields once expanded (compiling it took 0.4 s and held 10 MB).
 */
function fanOut(levels: number, aliases: number, limit = 0): string {
  const S = 'id title content published tags likes createdAt';
  const fragments: string[] = [];
  for (let k = 1; k <= levels; k++) {
    const last = k === levels;
    fragments.push(`fragment P${k} on Post { ${S} ${last ? '' : `author { ...U${k + 1} } reactions(limit: ${limit}) { id type createdAt user { ...U${k + 1} } post { ...P${k + 1} } }`} }`);
    fragments.push(`fragment U${k} on User { id name age avatar role createdAt ${last ? '' : `posts(limit: ${limit}) { ...P${k + 1} }`} }`);
  }
  const roots = Array.from({ length: aliases }, (_, a) => (a % 2 ? `a${a}: posts(limit: ${limit}) { ...P1 }` : `a${a}: users(limit: ${limit}) { ...U1 }`));
  return `query Fan { ${roots.join(' ')} } ${fragments.join(' ')}`;
}

describe('fields once fragments are expanded', () => {
  it('refuses a document whose fragments expand past 500 fields, whatever its cost, before compiling it', async () => {
    await expectRefused(fanOut(3, 30), 'MAX_COMPLEXITY');
    await expectRefused(fanOut(3, 28), 'MAX_COMPLEXITY');
  });

  it('runs the same fragments under fewer aliases', async () => {
    const data = await expectRuns(fanOut(2, 4, 1));
    expect(Object.keys(data)).toHaveLength(4);
  });
});

describe('configured limits', () => {
  it('follows QUERY_MAX_DEPTH and QUERY_MAX_COMPLEXITY', async () => {
    const tight = await startServer({ QUERY_MAX_DEPTH: '3', QUERY_MAX_COMPLEXITY: '50' });
    try {
      await expectRuns('{ users(limit: 1) { posts(limit: 1) { id } } }', undefined, tight);
      await expectRefused('{ users(limit: 1) { posts(limit: 1) { author { id } } } }', 'MAX_DEPTH', undefined, tight);
      await expectRuns('{ books(limit: 50) { id } }', undefined, tight);
      await expectRefused('{ books(limit: 51) { id } }', 'MAX_COMPLEXITY', undefined, tight);
    } finally {
      await tight.close();
    }
  });
});
