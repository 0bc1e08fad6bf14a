import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../../src/graphql/http/route.js';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * docs/graphql-endpoint.md ("Status codes"), status by status: every malformed request gets its 4xx and code, as
 * `{errors: [{message, extensions: {code}}]}` with no `data` — never a 500, never a stack.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
});
afterAll(() => server.close());

interface Raw {
  status: number;
  type: string;
  headers: Headers;
  text: string;
  body: any;
}

async function send(method: string, body?: string | Uint8Array, headers: Record<string, string> = {}, search = ''): Promise<Raw> {
  const response = await fetch(`${server.url}/graphql${search}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, type: response.headers.get('content-type') ?? '', headers: response.headers, text, body: parsed };
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };
const post = (body: string | Uint8Array, headers: Record<string, string> = JSON_HEADERS) => send('POST', body, headers);
const get = (params: Record<string, string>, headers: Record<string, string> = { accept: 'application/json' }) =>
  send('GET', undefined, headers, `?${new URLSearchParams(params)}`);

/** A request error: the status, one error with the code, no data, no stack, JSON. */
function expectRequestError(res: Raw, status: number, code: string | RegExp) {
  expect(res.status, res.text).toBe(status);
  expect(res.type).toMatch(/^application\/(graphql-response\+)?json/);
  expect(res.body).toBeTypeOf('object');
  expect(res.body).not.toHaveProperty('data');
  expect(res.body.errors.length).toBeGreaterThanOrEqual(1);
  for (const error of res.body.errors) {
    expect(typeof error.message).toBe('string');
    if (typeof code === 'string') expect(error.extensions.code).toBe(code);
    else expect(error.extensions.code).toMatch(code);
  }
  expect(res.text).not.toMatch(/\n\s+at |stack|node_modules/);
}

describe('200', () => {
  it('answers a query over POST', async () => {
    const res = await post(JSON.stringify({ query: '{ books(limit: 1) { title } }' }));
    expect(res.status).toBe(200);
    expect(withoutCost(res.body)).toEqual({ data: { books: [{ title: expect.any(String) }] } });
  });

  it('accepts null for each optional member', async () => {
    const res = await post(JSON.stringify({ query: '{ __typename }', variables: null, operationName: null, extensions: null }));
    expect(res.status).toBe(200);
    expect(withoutCost(res.body)).toEqual({ data: { __typename: 'Query' } });
  });

  it('accepts a charset parameter on the JSON content type', async () => {
    const res = await post(JSON.stringify({ query: '{ __typename }' }), { 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(200);
  });

  it('answers 200 with partial data and errors for a field error', async () => {
    const user = await server.inkwell.backends.db.kysely.selectFrom('users').select('id').executeTakeFirstOrThrow();
    const query = 'query ($id: ID!) { ok: books(limit: 1) { id } user(id: $id) { posts(limit: 0) { id } } }';
    const res = await post(JSON.stringify({ query, variables: { id: user.id } }));
    expect(res.status).toBe(200);
    expect(res.body.data.ok).toHaveLength(1);
    expect(res.body.data.user).toBeNull();
    expect(res.body.errors).toHaveLength(1);
    expect(res.body.errors[0]).toMatchObject({ path: ['user', 'posts'], extensions: { code: 'BAD_USER_INPUT' } });
  });

  it('answers a query over GET, with variables and operationName in the query string', async () => {
    const res = await get({
      query: 'query A($n: Int) { books(limit: $n) { id } } query B { __typename }',
      variables: JSON.stringify({ n: 2 }),
      operationName: 'A',
    });
    expect(res.status).toBe(200);
    expect(res.body.data.books).toHaveLength(2);
  });
});

describe('content negotiation', () => {
  const body = JSON.stringify({ query: '{ __typename }' });

  it('answers application/graphql-response+json when the client accepts it', async () => {
    const res = await post(body, { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json;q=0.9' });
    expect(res.type).toMatch(/^application\/graphql-response\+json/);
  });

  it.each([
    ['application/json', 'application/json'],
    ['*/*', 'application/json'],
    [undefined, 'application/json'],
  ])('answers %s with %s', async (accept, expected) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (accept) headers['accept'] = accept;
    const res = await post(body, headers);
    expect(res.status).toBe(200);
    expect(res.type.split(';')[0]).toBe(expected);
  });

  it('uses the negotiated type for request errors too', async () => {
    const a = await post('{', { 'content-type': 'application/json', accept: 'application/json' });
    expect(a.type.split(';')[0]).toBe('application/json');
    const b = await post('{', { 'content-type': 'application/json', accept: 'application/graphql-response+json' });
    expect(b.type.split(';')[0]).toBe('application/graphql-response+json');
  });

  it('refuses a client that accepts neither JSON type with 406', async () => {
    const res = await post(body, { 'content-type': 'application/json', accept: 'text/plain' });
    expect(res.status).toBe(406);
    expect(res.body.errors[0].extensions.code).toBe('NOT_ACCEPTABLE');
  });
});

describe('400 malformed requests', () => {
  it.each([
    ['malformed JSON', '{"query": "{ __typename }"'],
    ['JSON with trailing garbage', '{"query": "{ __typename }"} x'],
    ['an empty body', ''],
    ['a JSON string', '"{ __typename }"'],
    ['a JSON number', '42'],
    ['JSON null', 'null'],
    ['JSON true', 'true'],
    ['a batch (JSON array)', JSON.stringify([{ query: '{ __typename }' }, { query: '{ __typename }' }])],
    ['an empty batch', '[]'],
    ['a missing query', JSON.stringify({ variables: {} })],
    ['a null query', JSON.stringify({ query: null })],
    ['a non-string query', JSON.stringify({ query: 42 })],
    ['an object query', JSON.stringify({ query: { kind: 'Document' } })],
    ['variables as a string', JSON.stringify({ query: '{ __typename }', variables: '{}' })],
    ['variables as an array', JSON.stringify({ query: '{ __typename }', variables: [] })],
    ['extensions as a number', JSON.stringify({ query: '{ __typename }', extensions: 1 })],
    ['operationName as a number', JSON.stringify({ query: '{ __typename }', operationName: 1 })],
  ])('refuses %s with 400', async (_what, body) => {
    expectRequestError(await post(body), 400, /^(BAD_REQUEST|GRAPHQL_PARSE_FAILED)$/);
  });

  it('refuses a batch without running any of its operations', async () => {
    const before = server.inkwell.backends.db.queryCount;
    const res = await post(JSON.stringify([{ query: '{ books { id } }' }]));
    expectRequestError(res, 400, 'BAD_REQUEST');
    expect(server.inkwell.backends.db.queryCount).toBe(before);
  });

  it('refuses a syntax error with GRAPHQL_PARSE_FAILED and its location', async () => {
    for (const query of ['{ books { id }', '{', 'query {', '{ books(limit: ) { id } }', 'mutation', '']) {
      const res = await post(JSON.stringify({ query }));
      expectRequestError(res, 400, query === '' ? /^(BAD_REQUEST|GRAPHQL_PARSE_FAILED)$/ : 'GRAPHQL_PARSE_FAILED');
    }
    const res = await post(JSON.stringify({ query: '{ books { id }' }));
    expect(res.body.errors[0].locations).toEqual([{ line: 1, column: 15 }]);
  });

  it.each([
    ['an unknown field', '{ books { isbn } }'],
    ['an unknown root field', '{ nope }'],
    ['a wrong argument type', '{ books(limit: "ten") { id } }'],
    ['an Int out of 32-bit range', '{ books(limit: 3000000000) { id } }'],
    ['a missing required argument', '{ user { id } }'],
    ['an unknown argument', '{ books(first: 2) { id } }'],
    ['a scalar with a selection', '{ books { title { x } } }'],
    ['an object without a selection', '{ books }'],
    ['an unknown fragment', '{ books { ...Nope } }'],
    ['an unused fragment', '{ books { id } } fragment F on Book { id }'],
    ['an undeclared variable', '{ books(limit: $n) { id } }'],
    ['an unused variable', 'query ($n: Int) { books { id } }'],
    ['a variable of the wrong type', 'query ($n: String) { books(limit: $n) { id } }'],
    ['an unknown directive', '{ books @cached { id } }'],
    ['a fragment cycle', '{ books { ...A } } fragment A on Book { ...B } fragment B on Book { ...A }'],
    ['conflicting fields under one key', '{ books { x: id x: title } }'],
    ['a subscription over HTTP with two root fields', 'subscription { userCreated { id } postPublished(postId: "1") { id } }'],
  ])('refuses %s with GRAPHQL_VALIDATION_FAILED', async (_what, query) => {
    expectRequestError(await post(JSON.stringify({ query })), 400, 'GRAPHQL_VALIDATION_FAILED');
  });

  it('refuses a valid subscription over HTTP with 400', async () => {
    const res = await post(JSON.stringify({ query: 'subscription { userCreated { id } }' }));
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
  });

  it.each([
    ['a missing required variable', 'query ($id: ID!) { user(id: $id) { id } }', undefined],
    ['null for a required variable', 'query ($id: ID!) { user(id: $id) { id } }', { id: null }],
    ['a string for an Int', 'query ($n: Int) { books(limit: $n) { id } }', { n: '5' }],
    ['a float for an Int', 'query ($n: Int) { books(limit: $n) { id } }', { n: 1.5 }],
    ['an Int beyond 32 bits', 'query ($n: Int) { books(limit: $n) { id } }', { n: 2 ** 31 }],
    ['an object for an ID', 'query ($id: ID!) { user(id: $id) { id } }', { id: { a: 1 } }],
    ['a string for a Boolean', 'query ($b: Boolean!) { books @include(if: $b) { id } }', { b: 'true' }],
    ['a list for a String', 'query ($r: String) { users(role: $r) { id } }', { r: ['user'] }],
  ])('refuses variables that do not match their types: %s', async (_what, query, variables) => {
    const res = await post(JSON.stringify({ query, variables }));
    expectRequestError(res, 400, 'GRAPHQL_VALIDATION_FAILED');
    expect(res.body.errors[0].message).toMatch(/Variable "\$\w+"/);
  });

  it('refuses bad variables over GET too, and malformed JSON in the variables parameter', async () => {
    expectRequestError(await get({ query: 'query ($n: Int) { books(limit: $n) { id } }', variables: '{"n":"x"}' }), 400, 'GRAPHQL_VALIDATION_FAILED');
    expectRequestError(await get({ query: '{ __typename }', variables: '{nope' }), 400, 'BAD_REQUEST');
    expectRequestError(await get({ query: '{ __typename }', extensions: '[' }), 400, 'BAD_REQUEST');
    expectRequestError(await get({ query: '{ __typename }', variables: '[1]' }), 400, 'BAD_REQUEST');
  });

  describe('several operations in one document', () => {
    const doc = 'query A { books(limit: 1) { id } } query B { users(limit: 1) { id } }';

    it('needs operationName', async () => {
      expectRequestError(await post(JSON.stringify({ query: doc })), 400, 'GRAPHQL_VALIDATION_FAILED');
      expectRequestError(await post(JSON.stringify({ query: doc, operationName: null })), 400, 'GRAPHQL_VALIDATION_FAILED');
      expectRequestError(await get({ query: doc }), 400, 'GRAPHQL_VALIDATION_FAILED');
    });

    it('refuses an unknown operationName', async () => {
      expectRequestError(await post(JSON.stringify({ query: doc, operationName: 'C' })), 400, 'GRAPHQL_VALIDATION_FAILED');
      expectRequestError(await post(JSON.stringify({ query: '{ __typename }', operationName: 'C' })), 400, 'GRAPHQL_VALIDATION_FAILED');
      expectRequestError(await get({ query: doc, operationName: 'C' }), 400, 'GRAPHQL_VALIDATION_FAILED');
    });

    it('runs the named one', async () => {
      const res = await post(JSON.stringify({ query: doc, operationName: 'B' }));
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.data)).toEqual(['users']);
    });
  });

  it('refuses GET without a query', async () => {
    expectRequestError(await get({}), 400, 'BAD_REQUEST');
  });
});

describe('405 wrong method', () => {
  it('refuses a mutation over GET', async () => {
    const res = await get({ query: 'mutation { addBook(title: "T", author: "A") { id } }' });
    expectRequestError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toMatch(/POST/);
  });

  it('refuses a mutation over GET chosen by operationName among queries', async () => {
    const res = await get({ query: 'query Q { __typename } mutation M { deletePost(id: "x") }', operationName: 'M' });
    expectRequestError(res, 405, 'METHOD_NOT_ALLOWED');
  });

  it.each(['PUT', 'DELETE', 'PATCH'])('refuses %s', async (method) => {
    const res = await send(method, JSON.stringify({ query: '{ __typename }' }), JSON_HEADERS);
    expectRequestError(res, 405, 'METHOD_NOT_ALLOWED');
    expect(res.headers.get('allow')).toBe('GET, POST');
  });
});

describe('413 body too large', () => {
  /** `{"query":"{ __typename }"}` padded with spaces inside the object to exactly `size` bytes. */
  const padded = (size: number) => {
    const head = '{"query":"{ __typename }"';
    return head + ' '.repeat(size - head.length - 1) + '}';
  };

  it('accepts a body of exactly 1 MiB', async () => {
    const body = padded(MAX_BODY_BYTES);
    expect(Buffer.byteLength(body)).toBe(1_048_576);
    const res = await post(body);
    expect(res.status).toBe(200);
    expect(withoutCost(res.body)).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses one byte more with 413', async () => {
    expectRequestError(await post(padded(MAX_BODY_BYTES + 1)), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('refuses a large body of another content type with 413 or 415, never 500', async () => {
    const res = await post('x'.repeat(MAX_BODY_BYTES + 10), { 'content-type': 'text/plain' });
    expect([413, 415]).toContain(res.status);
    expect(res.body.errors[0].extensions.code).toMatch(/^(PAYLOAD_TOO_LARGE|UNSUPPORTED_MEDIA_TYPE)$/);
  });
});

describe('415 other content types', () => {
  const body = JSON.stringify({ query: '{ __typename }' });
  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/graphql',
    'application/xml',
    'application/json; charset=latin1',
    'application/jsonx',
  ])('refuses %s', async (type) => {
    expectRequestError(await post(body, { 'content-type': type }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('refuses a POST without a content type', async () => {
    const res = await post(new TextEncoder().encode(body), {});
    expectRequestError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  it('runs nothing from a form post (CSRF: a simple request never executes)', async () => {
    const res = await post('query=%7B__typename%7D', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(415);
    expect(res.body).not.toHaveProperty('data');
  });
});

describe('development-only surfaces', () => {
  it('serves GraphiQL to a browser', async () => {
    const res = await send('GET', undefined, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' });
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/html/);
    expect(res.text).toContain('GraphiQL');
  });

  it('answers introspection', async () => {
    const res = await post(JSON.stringify({ query: '{ __schema { queryType { name } types { name } } }' }));
    expect(res.status).toBe(200);
    expect(res.body.data.__schema.queryType.name).toBe('Query');
    expect(res.body.data.__schema.types.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['User', 'Post', 'Book', 'Reaction']));
  });
});

describe('429 rate limited', () => {
  it('answers 429 with Retry-After and RATE_LIMITED once a client passes RATE_LIMIT_MAX, without running the operation', async () => {
    const limited = await startServer({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' });
    try {
      for (let i = 0; i < 3; i++) expect((await limited.gql('{ __typename }')).status).toBe(200);
      const before = limited.inkwell.backends.db.queryCount;
      const response = await fetch(`${limited.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ books { id } }' }),
      });
      expect(response.status).toBe(429);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      const body = (await response.json()) as any;
      expect(body).toEqual({ error: 'Too many requests', errors: [{ message: expect.any(String), extensions: { code: 'RATE_LIMITED' } }] });
      expect(limited.inkwell.backends.db.queryCount).toBe(before);
    } finally {
      await limited.close();
    }
  });
});
