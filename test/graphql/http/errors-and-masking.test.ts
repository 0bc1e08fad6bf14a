import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, TEST_SECRET, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * docs/errors.md: every error has `message` and `extensions.code`; nothing leaks — no
 * stack traces, no SQL, no internal messages in production, no "Did you mean"
 * suggestions, no introspection or GraphiQL. One development and one production server.
 */
let dev: TestServer;
let prod: TestServer;

beforeAll(async () => {
  [dev, prod] = await Promise.all([
    startServer({ SEED_DEMO_DATA: 'auto' }),
    startServer({ NODE_ENV: 'production', AUTH_SECRET: TEST_SECRET, BCRYPT_COST: '10' }),
  ]);
});
afterAll(async () => {
  await Promise.all([dev?.close(), prod?.close()]);
});

/** Every error well-formed; no stack, SQL or file path anywhere in the body. */
function expectClean(body: unknown) {
  const text = JSON.stringify(body);
  expect(text).not.toMatch(/\bat \S+ \(|stack|node_modules|\/src\/|\.ts:\d|sqlite|SELECT |no such table/i);
  for (const error of (body as { errors?: { message: unknown; extensions?: { code?: unknown } }[] }).errors ?? []) {
    expect(typeof error.message).toBe('string');
    expect(typeof error.extensions?.code).toBe('string');
  }
}

const AT = '2020-01-01T00:00:00.000Z';

/** Inserts rows with foreign keys unchecked (SQLite: one connection; PostgreSQL: the test superuser). */
async function withoutForeignKeys(server: TestServer, statement: ReturnType<typeof sql>) {
  const db = server.inkwell.backends.db;
  if (db.dialect === 'sqlite') {
    await sql`PRAGMA foreign_keys = OFF`.execute(db.kysely);
    try {
      await statement.execute(db.kysely);
    } finally {
      await sql`PRAGMA foreign_keys = ON`.execute(db.kysely);
    }
  } else {
    await db.kysely.transaction().execute(async (trx) => {
      await sql`SET LOCAL session_replication_role = replica`.execute(trx);
      await statement.execute(trx);
    });
  }
}

/** A published post whose author does not exist: `Post.author` (non-null) resolves to null. */
async function orphanPost(server: TestServer, id: string) {
  await withoutForeignKeys(
    server,
    sql`INSERT INTO posts (id, author_id, title, content, published, tags, created_at, updated_at)
      VALUES (${id}, 'ghost-author', 'Orphan', NULL, 1, NULL, ${AT}, ${AT})`,
  );
}

/** A published post with stored tags of `tagsJson` (a well-formed author of its own). */
async function postWithTags(server: TestServer, id: string, tagsJson: string) {
  const db = server.inkwell.backends.db.kysely;
  await db
    .insertInto('users')
    .values({ id: `author-${id}`, name: 'Author', email: `${id}@example.com`, age: null, avatar: null, role: 'user', password_hash: null, created_at: AT })
    .execute();
  await db
    .insertInto('posts')
    .values({ id, author_id: `author-${id}`, title: 'T', content: null, published: 1, tags: tagsJson, created_at: AT, updated_at: AT })
    .execute();
}

describe('suggestions and introspection', () => {
  const typos = [
    '{ books { titel } }',
    '{ books(limt: 1) { id } }',
    'query ($n: Innt) { books(limit: $n) { id } }',
    '{ bookz { id } }',
  ];

  it('development: "Did you mean" hints help the developer', async () => {
    for (const query of typos) {
      const res = await dev.gql(query);
      expect(res.status).toBe(400);
      expect(res.body.errors!.some((e) => /Did you mean/.test(e.message)), query).toBe(true);
      expectClean(res.body);
    }
  });

  it('production: the same errors without any suggestion', async () => {
    for (const query of typos) {
      const res = await prod.gql(query);
      expect(res.status).toBe(400);
      expect(res.body).not.toHaveProperty('data');
      expect(res.body.errors!.length).toBeGreaterThan(0);
      for (const e of res.body.errors!) {
        expect(e.message).not.toMatch(/Did you mean/i);
        expect(e.message.length).toBeGreaterThan(0);
        expect(e.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
      }
    }
  });

  it('production: refuses introspection, keeps __typename', async () => {
    for (const query of ['{ __schema { types { name } } }', '{ __type(name: "User") { fields { name } } }', '{ books { __type: __typename } __schema { queryType { name } } }']) {
      const res = await prod.gql(query);
      expect(res.status, query).toBe(400);
      expect(res.body).not.toHaveProperty('data');
      expect(res.body.errors![0]!.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    }
    const res = await prod.gql('{ __typename }');
    expect(withoutCost(res.body)).toEqual({ data: { __typename: 'Query' } });
  });

  it('production: refuses introspection over GET too', async () => {
    const response = await fetch(`${prod.url}/graphql?${new URLSearchParams({ query: '{ __schema { queryType { name } } }' })}`);
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).not.toContain('"data"');
  });

  it('development: answers a deep introspection query (tools ask deep; it does not count against depth)', async () => {
    const query = '{ __schema { types { fields { type { ofType { ofType { ofType { ofType { name } } } } } } } } }';
    const res = await dev.gql(query);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveProperty('__schema.types');
  });

  it('production: no GraphiQL page for a browser', async () => {
    const response = await fetch(`${prod.url}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    const text = await response.text();
    expect(response.headers.get('content-type') ?? '').not.toMatch(/text\/html/);
    expect(text).not.toMatch(/graphiql/i);
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
  });

  it('development: GraphiQL for a browser', async () => {
    const response = await fetch(`${dev.url}/graphql`, { headers: { accept: 'text/html' } });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('GraphiQL');
  });
});

describe('internal errors', () => {
  it('masks a database failure in a resolver in both modes, keeping the siblings', async () => {
    for (const server of [dev, prod]) {
      const db = server.inkwell.backends.db.kysely;
      await sql`ALTER TABLE books RENAME TO books_hidden`.execute(db);
      try {
        const res = await server.gql('{ book(id: "b1") { id } users(limit: 1) { id } }');
        expect(res.status).toBe(200);
        expect(res.body.data).toHaveProperty('book', null);
        expect(Array.isArray((res.body.data as { users: unknown }).users)).toBe(true);
        expect(res.body.errors).toEqual([
          { message: 'Internal server error', extensions: { code: 'INTERNAL_ERROR' }, locations: expect.any(Array), path: ['book'] },
        ]);
        expectClean(res.body);

        const list = await server.gql('{ books { id } }');
        expect(list.status).toBe(200);
        expect(list.body.data).toBeNull();
        expect(list.body.errors![0]).toMatchObject({ message: 'Internal server error', extensions: { code: 'INTERNAL_ERROR' } });
        expectClean(list.body);
      } finally {
        await sql`ALTER TABLE books_hidden RENAME TO books`.execute(db);
      }
    }
  });

  it('reports a null in a non-null position as INTERNAL_ERROR, propagating to the nearest nullable parent', async () => {
    for (const server of [dev, prod]) {
      await orphanPost(server, 'orphan-post');
      const res = await server.gql('{ post(id: "orphan-post") { title author { name } } __typename }');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ post: null, __typename: 'Query' });
      expect(res.body.errors).toHaveLength(1);
      expect(res.body.errors![0]).toMatchObject({ path: ['post', 'author'], extensions: { code: 'INTERNAL_ERROR' } });
      if (server === prod) expect(res.body.errors![0]!.message).toBe('Internal server error');
      expectClean(res.body);
    }
  });

  it('reports a value that fails serialisation as INTERNAL_ERROR; production does not echo it', async () => {
    for (const server of [dev, prod]) {
      await postWithTags(server, 'bad-tags', JSON.stringify(['fine', { secret: 'do-not-leak' }]));
      const res = await server.gql('{ post(id: "bad-tags") { id tags } }');
      expect(res.status).toBe(200);
      // Post.tags is nullable: only it becomes null.
      expect(res.body.data).toEqual({ post: { id: 'bad-tags', tags: null } });
      expect(res.body.errors![0]).toMatchObject({ path: ['post', 'tags', 1], extensions: { code: 'INTERNAL_ERROR' } });
      expectClean(res.body);
    }
    // Outside production the internal message may help the developer; in production it never shows.
    const res = await prod.gql('{ post(id: "bad-tags") { id tags } }');
    expect(res.body.errors![0]!.message).toBe('Internal server error');
    expect(JSON.stringify(res.body)).not.toContain('do-not-leak');
  });

  it('masks an exception thrown while reading a record, in both modes', async () => {
    for (const server of [dev, prod]) {
      await postWithTags(server, 'corrupt-tags', '{not json: do-not-leak');
      const res = await server.gql('{ post(id: "corrupt-tags") { id } books(limit: 1) { id } }');
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ post: null });
      expect(res.body.errors).toEqual([
        { message: 'Internal server error', extensions: { code: 'INTERNAL_ERROR' }, locations: expect.any(Array), path: ['post'] },
      ]);
      expect(JSON.stringify(res.body)).not.toMatch(/do-not-leak|JSON|Unexpected token/);
    }
  });
});

describe('request errors carry a code and nothing else', () => {
  it.each([
    ['{ books { id }', 'GRAPHQL_PARSE_FAILED'],
    ['{ nope }', 'GRAPHQL_VALIDATION_FAILED'],
  ])('%s → %s, in both modes', async (query, code) => {
    for (const server of [dev, prod]) {
      const res = await server.gql(query);
      expect(res.status).toBe(400);
      expect(res.body).not.toHaveProperty('data');
      for (const e of res.body.errors!) {
        expect(e.extensions).toEqual({ code });
        expect(Object.keys(e).sort()).toEqual(expect.arrayContaining(['extensions', 'message']));
        expect(Object.keys(e).every((k) => ['message', 'extensions', 'locations', 'path'].includes(k))).toBe(true);
      }
      expectClean(res.body);
    }
  });

  it('field errors carry the code, the path and (for bad input) the argument', async () => {
    const res = await prod.gql('{ posts(limit: 1000) { id } }');
    expect(res.status).toBe(200);
    expect(res.body.errors![0]).toEqual({
      message: expect.stringMatching(/limit/),
      extensions: { code: 'BAD_USER_INPUT', argument: 'limit' },
      locations: [{ line: 1, column: 3 }],
      path: ['posts'],
    });
  });

  it('a cached document keeps the locations of its errors, interpreted and compiled (src/graphql/operation/kept-document.ts)', async () => {
    const query = 'query Limits($n: Int!) {\n  first: posts(limit: 1) { id }\n    second: posts(limit: $n) { id }\n}';
    // Executions 1–9 are graphql-js's, the rest graphql-jit's (src/graphql/operation/executable.ts).
    for (let run = 1; run <= 12; run++) {
      const field = await prod.gql(query, { n: 1000 });
      expect(field.status).toBe(200);
      expect(field.body.errors).toEqual([
        {
          message: expect.stringMatching(/limit/),
          extensions: { code: 'BAD_USER_INPUT', argument: 'limit' },
          locations: [{ line: 3, column: 5 }],
          path: ['second'],
        },
      ]);
      const variable = await prod.gql(query, { n: 'many' });
      expect(variable.status).toBe(400);
      expect(variable.body.errors).toEqual([
        { message: expect.stringMatching(/\$n/), extensions: { code: 'GRAPHQL_VALIDATION_FAILED' }, locations: [{ line: 1, column: 14 }] },
      ]);
    }
  });

  it('an anonymous mutation is UNAUTHENTICATED in production, with nothing stored', async () => {
    const db = prod.inkwell.backends.db.kysely;
    const before = await db.selectFrom('books').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    const res = await prod.gql('mutation { addBook(title: "T", author: "A") { id } }');
    expect(res.status).toBe(200);
    expect(res.body.data).toBeNull();
    expect(res.body.errors![0]).toMatchObject({ path: ['addBook'], extensions: { code: 'UNAUTHENTICATED' } });
    const after = await db.selectFrom('books').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
    expect(Number(after.n)).toBe(Number(before.n));
  });
});
