import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, withoutCost, type TestServer } from '../../helpers/server.js';
import { account, collect, eventsOf, eventually, once, post, rawEventStream, refusalOf, sseClient, waitFor } from './helpers.js';

/*
 * GraphQL over SSE (docs/subscriptions.md, "Server-Sent Events") with graphql-sse's own
 * client in distinct connections mode: each operation is one POST that accepts
 * `text/event-stream`, answered by one `next` per result and `complete`.
 */

let server: TestServer;
let editor: Awaited<ReturnType<typeof account>>;
let admin: Awaited<ReturnType<typeof account>>;
let reader: Awaited<ReturnType<typeof account>>;

beforeAll(async () => {
  server = await startServer({ RATE_LIMIT_WINDOW_MS: '86400000' });
  editor = await account(server, 'editor', 'SSE Editor');
  admin = await account(server, 'admin', 'SSE Admin');
  reader = await account(server, 'user', 'SSE Reader');
});
afterAll(async () => {
  await server?.close();
});

const bearer = (who: { token: string }) => ({ authorization: `Bearer ${who.token}` });

/** Every subscription ended on the server: no pub/sub listener left. */
const released = () => waitFor(() => server.inkwell.backends.pubsub.listenerCount() === 0, 15_000, 'the subscriptions released');

describe('queries and mutations: one next, then complete', () => {
  it('a query', async () => {
    await server.gql('mutation { addBook(title: "Dune", author: "Frank Herbert", year: 1965) { id } }', undefined, { headers: bearer(editor) });
    const result = await once(sseClient(server), { query: '{ books { title author year } }' });
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(result.results).toHaveLength(1);
    expect(result.results[0]?.data).toEqual({ books: expect.arrayContaining([{ title: 'Dune', author: 'Frank Herbert', year: 1965 }]) });
  });

  it('a mutation, signed in by a Bearer header', async () => {
    const result = await once(sseClient(server, { headers: bearer(editor) }), {
      query: 'mutation Add($title: String!) { addBook(title: $title, author: "Ursula K. Le Guin") { title author } }',
      variables: { title: 'The Dispossessed' },
      operationName: 'Add',
    });
    expect(result.error).toBeUndefined();
    expect(result.results.map((r) => r.data)).toEqual([{ addBook: { title: 'The Dispossessed', author: 'Ursula K. Le Guin' } }]);
    expect(result.completed).toBe(true);
  });

  it('field rules as over HTTP: an anonymous mutation gets UNAUTHENTICATED in its one result', async () => {
    const result = await once(sseClient(server), { query: 'mutation { addBook(title: "x", author: "y") { id } }' });
    expect(result.results).toHaveLength(1);
    expect(result.results[0]?.data).toBeNull();
    expect(result.results[0]?.errors?.map((e) => e.extensions?.['code'])).toEqual(['UNAUTHENTICATED']);
    expect(result.completed).toBe(true);
  });

  it('the stream on the wire: text/event-stream, `event: next` with the result, `event: complete` with an empty data line', async () => {
    const res = await rawEventStream(server, { body: { query: '{ me { id } }' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.text).toMatch(/event: complete\ndata:\n\n$/);
    expect(eventsOf(res.text)).toEqual([
      { event: 'next', data: expect.objectContaining({ data: { me: null } }) },
      { event: 'complete', data: null },
    ]);
  });

  it('GET with the members in the query string, as EventSource sends it: queries yes, mutations 405 before any stream', async () => {
    const query = new URLSearchParams({ query: '{ books(limit: 1) { title } }' }).toString();
    const res = await rawEventStream(server, { method: 'GET', query });
    expect(res.status).toBe(200);
    expect(eventsOf(res.text).map((e) => e.event)).toEqual(['next', 'complete']);
    expect(eventsOf(res.text)[0]?.data.data.books).toHaveLength(1);

    const mutation = new URLSearchParams({ query: 'mutation { addBook(title: "x", author: "y") { id } }' }).toString();
    const refused = await rawEventStream(server, { method: 'GET', query: mutation, headers: bearer(editor) });
    expect(refused.status).toBe(405);
    expect(refused.headers.get('allow')).toBe('POST');
    expect(refused.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(refused.text).errors[0].extensions.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('JSON clients are not affected: only an Accept that prefers text/event-stream gets a stream', async () => {
    const ask = async (accept: string) => {
      const res = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { accept, 'content-type': 'application/json' }, body: '{"query":"{ me { id } }"}' });
      await res.arrayBuffer();
      return res.headers.get('content-type')?.split(';')[0];
    };
    expect(await ask('application/json')).toBe('application/json');
    expect(await ask('*/*')).toBe('application/json');
    // urql's fetch lists JSON first, then text/event-stream: the client's order decides.
    expect(await ask('application/graphql-response+json, application/json, text/event-stream')).toBe('application/graphql-response+json');
    expect(await ask('text/event-stream')).toBe('text/event-stream');
    expect(await ask('application/json;q=0.5, text/event-stream')).toBe('text/event-stream');
  });
});

describe('refusals of the operation come inside the stream; refusals of the request before it', () => {
  const codesOf = async (query: string, variables?: Record<string, unknown>) => {
    const result = await once(sseClient(server), { query, variables });
    expect(result.error).toBeUndefined();
    expect(result.completed).toBe(true);
    expect(result.results).toHaveLength(1);
    expect(result.results[0]?.data).toBeUndefined();
    return result.results[0]?.errors?.map((e) => e.extensions?.['code']);
  };

  it('validation, syntax, depth, complexity and variables: one `next` with the errors and their codes, then complete', async () => {
    expect(await codesOf('{ nope }')).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(await codesOf('{ books { ')).toEqual(['GRAPHQL_PARSE_FAILED']);
    expect(await codesOf('{ users { posts { author { posts { author { posts { author { name } } } } } } } }')).toEqual(['MAX_DEPTH']);
    expect(await codesOf('{ users(limit: 100) { posts(limit: 10) { author { name } } } }')).toEqual(['MAX_COMPLEXITY']);
    expect(await codesOf('query ($id: ID!) { post(id: $id) { title } }', { id: { not: 'an id' } })).toEqual(['GRAPHQL_VALIDATION_FAILED']);
  });

  it('a subscription that asks for an unknown field is refused in the stream too', async () => {
    expect(await codesOf('subscription { userCreated { nope } }')).toEqual(['GRAPHQL_VALIDATION_FAILED']);
  });

  it('the stream of a refusal on the wire is a 200 event stream', async () => {
    const res = await rawEventStream(server, { body: { query: '{ nope }' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(eventsOf(res.text)).toEqual([
      { event: 'next', data: { errors: [expect.objectContaining({ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })] } },
      { event: 'complete', data: null },
    ]);
  });
});

describe('persisted queries (the Apollo protocol) over SSE', () => {
  it('an unknown hash gets PERSISTED_QUERY_NOT_FOUND in the stream; with its text it runs and registers; then the hash alone runs', async () => {
    const query = '{ books(limit: 2) { title } }';
    const persistedQuery = { version: 1, sha256Hash: createHash('sha256').update(query).digest('hex') };
    const client = sseClient(server);

    const miss = await once(client, { query: undefined as unknown as string, extensions: { persistedQuery } });
    expect(miss.results.map((r) => r.errors?.[0]?.extensions?.['code'])).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
    expect(miss.completed).toBe(true);

    const registered = await once(client, { query, extensions: { persistedQuery } });
    expect(registered.results[0]?.errors).toBeUndefined();
    expect(registered.results[0]?.data).toEqual({ books: expect.any(Array) });

    const hit = await once(client, { query: undefined as unknown as string, extensions: { persistedQuery } });
    expect(hit.results.map((r) => r.data)).toEqual([registered.results[0]?.data]);
  });
});

describe('subscriptions: one next per event, until the client closes', () => {
  it('postReactionAdded receives the reaction added by a mutation sent over SSE, and nothing of another post', async () => {
    const watched = await post(server, editor.user);
    const other = await post(server, editor.user);
    const subscription = collect(sseClient(server), {
      query: 'subscription ($id: ID!) { postReactionAdded(postId: $id) { type user { name } post { id likes } } }',
      variables: { id: watched.id },
    });
    await subscription.connected;

    const react = (id: string, type: string) =>
      once(sseClient(server, { headers: bearer(reader) }), { query: 'mutation ($id: ID!, $type: String!) { addReaction(postId: $id, type: $type) { id } }', variables: { id, type } });
    expect((await react(other.id, 'like')).results[0]?.errors).toBeUndefined();
    expect((await react(watched.id, 'like')).results[0]?.errors).toBeUndefined();
    expect((await react(watched.id, 'wow')).results[0]?.errors).toBeUndefined();

    await waitFor(() => subscription.results.length === 2, 15_000, 'two events');
    expect(subscription.results.map(withoutCost)).toEqual([
      { data: { postReactionAdded: { type: 'like', user: { name: 'SSE Reader' }, post: { id: watched.id, likes: 1 } } } },
      { data: { postReactionAdded: { type: 'wow', user: { name: 'SSE Reader' }, post: { id: watched.id, likes: 1 } } } },
    ]);
    expect(subscription.completed).toBe(false);
    expect(subscription.error).toBeUndefined();

    // The client closes: the server lets the subscription go.
    subscription.stop();
    await released();
  });

  it('userCreated from createUser (an admin, by Bearer), with email hidden from an anonymous subscriber and shown to an admin one', async () => {
    const anonymous = collect(sseClient(server), { query: 'subscription { userCreated { name email } }' });
    const asAdmin = collect(sseClient(server, { headers: bearer(admin) }), { query: 'subscription { userCreated { name email } }' });
    await Promise.all([anonymous.connected, asAdmin.connected]);

    const created = await once(sseClient(server, { headers: bearer(admin) }), {
      query: 'mutation { createUser(name: "Streamed", email: "streamed@example.test") { id } }',
    });
    expect(created.results[0]?.errors).toBeUndefined();

    await waitFor(() => anonymous.results.length === 1 && asAdmin.results.length === 1, 15_000, 'the event on both streams');
    expect(withoutCost(anonymous.results[0])).toEqual({ data: { userCreated: { name: 'Streamed', email: null } } });
    expect(withoutCost(asAdmin.results[0])).toEqual({ data: { userCreated: { name: 'Streamed', email: 'streamed@example.test' } } });
    anonymous.stop();
    asAdmin.stop();
    await released();
  });

  it('a subscription whose arguments do not match their types is refused in the stream', async () => {
    const result = await once(sseClient(server), { query: 'subscription ($id: ID!) { postPublished(postId: $id) { id } }', variables: {} });
    expect(result.results[0]?.errors?.map((e) => e.extensions?.['code'])).toEqual(['GRAPHQL_VALIDATION_FAILED']);
    expect(result.completed).toBe(true);
  });
});

describe('callers: Bearer header or cookie, as over HTTP', () => {
  it('the auth-token cookie signs the stream in', async () => {
    const result = await once(sseClient(server, { headers: { cookie: reader.cookie } }), { query: '{ me { name } }' });
    expect(result.results.map((r) => r.data)).toEqual([{ me: { name: 'SSE Reader' } }]);
  });

  it('a stream answered to a credential is private to it (Cache-Control: private, no-store); an anonymous one no-cache', async () => {
    const signedIn = await rawEventStream(server, { body: { query: '{ me { id } }' }, headers: { cookie: reader.cookie } });
    expect(signedIn.headers.get('cache-control')).toBe('private, no-store');
    const anonymous = await rawEventStream(server, { body: { query: '{ me { id } }' } });
    expect(anonymous.headers.get('cache-control')).toBe('no-cache');
  });

  it('an invalid Bearer token answers 401 before the stream opens (RFC 6750), and the client sees it', async () => {
    const forged = `${editor.token.slice(0, -4)}AAAA`;
    const result = await once(sseClient(server, { headers: { authorization: `Bearer ${forged}` } }), { query: 'subscription { userCreated { id } }' });
    expect(result.results).toEqual([]);
    const refusal = await refusalOf(result.error);
    expect(refusal.status).toBe(401);
    expect(refusal.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(refusal.headers.get('content-type')).toMatch(/^application\/json/);
    expect(refusal.body.errors.map((e: any) => e.extensions.code)).toEqual(['UNAUTHENTICATED']);
  });

  it('an invalid auth-token cookie answers 401 and clears the cookie', async () => {
    const res = await rawEventStream(server, { body: { query: '{ me { id } }' }, headers: { cookie: 'auth-token=not-a-token' } });
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(res.headers.getSetCookie().some((c) => /^auth-token=;/.test(c) && /Max-Age=0/i.test(c))).toBe(true);
  });

  it('the CSRF rule of cookie-authenticated requests: POST only as JSON (415), and GET never a mutation (405)', async () => {
    const plain = await rawEventStream(server, {
      body: JSON.stringify({ query: 'mutation { addReaction(postId: "x", type: "like") { id } }' }),
      headers: { cookie: reader.cookie, 'content-type': 'text/plain' },
    });
    expect(plain.status).toBe(415);
    expect(JSON.parse(plain.text).errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');

    const viaGet = await rawEventStream(server, {
      method: 'GET',
      query: new URLSearchParams({ query: 'mutation { addReaction(postId: "x", type: "like") { id } }' }).toString(),
      headers: { cookie: reader.cookie },
    });
    expect(viaGet.status).toBe(405);
    expect(JSON.parse(viaGet.text).errors[0].extensions.code).toBe('METHOD_NOT_ALLOWED');
  });
});

describe('metrics', () => {
  it('open streams as a gauge, operations in the duration histogram with transport="sse"', async () => {
    const subscription = collect(sseClient(server), { query: 'subscription { userCreated { id } }' });
    await subscription.connected;
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(/^inkwell_sse_streams 1$/m);
    expect(metrics).toMatch(/^inkwell_sse_subscriptions 1$/m);
    expect(metrics).toMatch(/^inkwell_request_duration_seconds_count\{transport="sse",route="\/graphql",operation_type="subscription",status="200"\} [1-9]/m);
    expect(metrics).toMatch(/^inkwell_request_duration_seconds_count\{transport="sse",route="\/graphql",operation_type="query",status="200"\} [1-9]/m);
    // Streams are not counted again as plain HTTP requests when they end.
    expect(metrics).not.toMatch(/transport="http",route="\/graphql",operation_type="subscription"/);
    subscription.stop();
    await released();
    await eventually(async () => /^inkwell_sse_streams 0$/m.test(await (await fetch(`${server.url}/metrics`)).text()), 'the gauge back to 0');
  });
});
