import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * Property-based bad input: random documents, variables, bodies, content types and
 * query strings thrown at /graphql. Whatever arrives, the answer is well-formed JSON
 * with a 200 or 4xx status, every error has a message and a code, nothing leaks a stack
 * trace, and an anonymous caller stores nothing.
 */
let server: TestServer;
let counts: Record<string, number>;
const RUNS = 150;
/** How often each status was answered, to show the properties reached every branch. */
const statuses = new Map<number, number>();

const TABLES = ['users', 'posts', 'reactions', 'books'] as const;
async function tableCounts(): Promise<Record<string, number>> {
  const db = server.inkwell.backends.db.kysely;
  const out: Record<string, number> = {};
  for (const t of TABLES) {
    const row = await db.selectFrom(t).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    out[t] = Number(row.n);
  }
  return out;
}

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  counts = await tableCounts();
});
afterAll(async () => {
  console.log('fuzz statuses:', Object.fromEntries([...statuses].sort(([a], [b]) => a - b)));
  // The generators reached executed operations as well as each kind of refusal.
  for (const status of [200, 400, 405, 415]) expect(statuses.get(status) ?? 0, `status ${status}`).toBeGreaterThan(0);
  // Anonymous fuzzing can never write; and the service still answers.
  expect(await tableCounts()).toEqual(counts);
  const res = await server.gql('{ __typename }');
  expect(withoutCost(res.body)).toEqual({ data: { __typename: 'Query' } });
  await server.close();
});

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

async function request(init: { method?: string; body?: string | Uint8Array; headers?: Record<string, string>; search?: string }): Promise<Answer> {
  const response = await fetch(`${server.url}/graphql${init.search ?? ''}`, {
    method: init.method ?? 'POST',
    headers: init.headers,
    body: init.body,
  });
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() };
}

/** The invariant every answer keeps. Returns the parsed body. */
function wellFormed(answer: Answer): any {
  statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
  const context = `${answer.status} ${answer.text.slice(0, 500)}`;
  expect(answer.status === 200 || (answer.status >= 400 && answer.status < 500), context).toBe(true);
  expect(answer.contentType, context).toMatch(/^application\/(graphql-response\+)?json; charset=utf-8$/);
  const body = JSON.parse(answer.text);
  expect(typeof body === 'object' && body !== null && !Array.isArray(body), context).toBe(true);
  expect(Object.keys(body).every((k) => k === 'data' || k === 'errors' || k === 'extensions'), context).toBe(true);
  expect('data' in body || 'errors' in body, context).toBe(true);
  if (answer.status >= 400) {
    expect(body, context).not.toHaveProperty('data');
    expect(body.errors.length, context).toBeGreaterThan(0);
  }
  if ('errors' in body) {
    expect(Array.isArray(body.errors), context).toBe(true);
    for (const error of body.errors) {
      expect(typeof error.message, context).toBe('string');
      expect(typeof error.extensions?.code, context).toBe('string');
      expect(error.extensions.code, context).not.toBe('INTERNAL_ERROR');
    }
  }
  expect(answer.text, context).not.toMatch(/\bat \S+ \(|"stack"|node_modules|\.ts:\d+/);
  return body;
}

// ---- generators -----------------------------------------------------------------

const names = ['users', 'user', 'posts', 'post', 'books', 'book', 'me', 'id', 'name', 'email', 'age', 'avatar', 'role',
  'postsCount', 'createdAt', 'title', 'content', 'author', 'published', 'tags', 'likes', 'reactions', 'type', 'year',
  '__typename', '__schema', '__type', 'types', 'fields', 'limit', 'offset', 'addBook', 'createPost', 'deletePost',
  'updateUser', 'addReaction', 'publishPost', 'Query', 'User', 'Post', 'Book', 'Reaction', 'Int', 'ID', 'String', 'Boolean',
  'query', 'mutation', 'subscription', 'fragment', 'on', 'true', 'false', 'null', 'include', 'skip', 'if', 'deprecated', 'x', 'A'];
const punctuation = ['{', '}', '(', ')', '[', ']', ':', '!', '$', '@', '...', '=', '|', '&', ',', '"', '"""', '#', '\n'];
const token = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...names) },
  { weight: 5, arbitrary: fc.constantFrom(...punctuation) },
  { weight: 1, arbitrary: fc.integer({ min: -5, max: 200 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom('1.5', '1e400', '-0', '2147483648', '0x10', '"str"', '"\\u0000"', '"\\uD800"', '"unterminated') },
  { weight: 1, arbitrary: fc.string({ maxLength: 4, unit: 'binary' }) },
);
/** Token soup: mostly invalid, sometimes valid documents built from the schema's words. */
const soup = fc.array(token, { maxLength: 60 }).map((ts) => ts.join(' '));

/** Valid documents to start mutating from. */
const seeds = [
  '{ users { id name posts { title author { name } } } }',
  'query Q($n: Int = 2) { posts(limit: $n) { id ...F } } fragment F on Post { title likes }',
  '{ a: books(limit: 1) { title } b: book(id: "x") { id } me { id } }',
  'query ($id: ID!) { user(id: $id) { email postsCount } }',
  'mutation { addBook(title: "t", author: "a") { id } }',
  '{ posts { reactions { type user { name } } } } ',
  'query A { __typename } query B { books { year @include(if: true) } }',
];
const mutated = fc
  .tuple(fc.constantFrom(...seeds), fc.array(fc.tuple(fc.nat(), fc.nat(3), fc.string({ maxLength: 3 })), { minLength: 1, maxLength: 6 }))
  .map(([doc, edits]) => {
    let s = doc;
    for (const [pos, del, ins] of edits) {
      const at = pos % (s.length + 1);
      s = s.slice(0, at) + ins + s.slice(at + del);
    }
    return s;
  });
const nested = fc.tuple(fc.integer({ min: 1, max: 400 }), fc.constantFrom('{ users ', '{ ', '[', '(')).map(([n, open]) => open.repeat(n));

const document = fc.oneof(soup, mutated, fc.string({ maxLength: 200 }), fc.string({ maxLength: 100, unit: 'grapheme' }), nested);

const variableValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(2147483648, -2147483649, 1.5, 1e308, -0, '', '\u0000', 'user', 'admin', [], {}, [null]),
);
const variables = fc.oneof(
  fc.constant(undefined),
  fc.dictionary(fc.constantFrom('n', 'id', 'limit', 'offset', 'b', 'x', ''), variableValue, { maxKeys: 4 }),
  fc.jsonValue({ maxDepth: 2 }),
);
const operationName = fc.oneof(fc.constant(undefined), fc.constant(null), fc.constantFrom('Q', 'A', 'B', ''), fc.jsonValue({ maxDepth: 1 }));
const extensions = fc.oneof(
  fc.constant(undefined),
  fc.record({ persistedQuery: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ version: fc.constantFrom(1, 2, '1'), sha256Hash: fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f]{64}$/)) })) }),
  fc.jsonValue({ maxDepth: 2 }),
);
const accept = fc.constantFrom(undefined, 'application/json', 'application/graphql-response+json', '*/*', 'application/json;charset=utf-8, */*');

// ---- properties -----------------------------------------------------------------

describe('fuzzing /graphql', () => {
  it('random documents with random variables over POST', async () => {
    await fc.assert(
      fc.asyncProperty(document, variables, operationName, accept, async (query, vars, op, acc) => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (acc) headers['accept'] = acc;
        const body = JSON.stringify({ query, variables: vars, operationName: op });
        wellFormed(await request({ body, headers }));
      }),
      { numRuns: RUNS },
    );
  });

  it('valid shapes with random variables run or are refused cleanly', async () => {
    const typed = [
      'query ($n: Int) { posts(limit: $n) { id } }',
      'query ($n: Int!, $o: Int = 0) { users(limit: $n, offset: $o) { name } }',
      'query ($id: ID!) { post(id: $id) { title author { name } } }',
      'query ($b: Boolean!) { books @include(if: $b) { id } }',
      'query ($r: String) { users(role: $r) { role } }',
      'query ($t: [String!]) { __typename }',
    ];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...typed), fc.dictionary(fc.constantFrom('n', 'o', 'id', 'b', 'r', 't'), variableValue, { maxKeys: 3 }), async (query, vars) => {
        const body = wellFormed(await request({ body: JSON.stringify({ query, variables: vars }), headers: { 'content-type': 'application/json' } }));
        // A coercion failure is a request error, never a field error with data.
        if (body.errors && !('data' in body)) for (const e of body.errors) expect(e.extensions.code).not.toBe('BAD_USER_INPUT');
      }),
      { numRuns: RUNS },
    );
  });

  it('random JSON bodies and member types', async () => {
    const member = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined));
    const shaped = fc.record({ query: fc.oneof(document, member), variables: member, operationName: member, extensions }, { requiredKeys: [] });
    await fc.assert(
      fc.asyncProperty(fc.oneof(shaped, fc.jsonValue({ maxDepth: 3 })), async (value) => {
        const body = JSON.stringify(value) ?? 'undefined';
        wellFormed(await request({ body, headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' } }));
      }),
      { numRuns: RUNS },
    );
  });

  it('random bytes under random content types and methods', async () => {
    const contentType = fc.oneof(
      fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/graphql', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/json; charset=utf-16', ''),
      fc.string({ maxLength: 30 }).filter((s) => /^[\x21-\x7e]*$/.test(s)),
    );
    const bytes = fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.string({ maxLength: 300 }).map((s) => new TextEncoder().encode(s)));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('POST', 'POST', 'POST', 'PUT', 'DELETE', 'PATCH'), contentType, bytes, async (method, type, body) => {
        const headers: Record<string, string> = {};
        if (type) headers['content-type'] = type;
        wellFormed(await request({ method, body, headers }));
      }),
      { numRuns: RUNS },
    );
  });

  it('random query strings over GET', async () => {
    const param = fc.oneof(document, fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)), fc.string({ maxLength: 50 }));
    const params = fc.dictionary(fc.constantFrom('query', 'variables', 'operationName', 'extensions', 'x'), param, { maxKeys: 4 });
    await fc.assert(
      fc.asyncProperty(params, fc.constantFrom(undefined, 'application/json', '*/*'), async (p, acc) => {
        const headers: Record<string, string> = {};
        if (acc) headers['accept'] = acc;
        wellFormed(await request({ method: 'GET', search: `?${new URLSearchParams(p)}`, headers }));
      }),
      { numRuns: RUNS },
    );
  });
});
