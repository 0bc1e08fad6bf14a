import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { send, type Sent } from '../../helpers/http-request.js';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/*
 * Methods and paths (README "Using the GraphQL endpoint"): /graphql serves GET and POST
 * and answers every other method — HEAD and an OPTIONS that is not a CORS preflight
 * included, and methods Fastify does not route at all — with 405, `Allow: GET, POST` and
 * METHOD_NOT_ALLOWED, before any body is read. Unknown paths answer 404 {error: "Not found"}.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server?.close());

const QUERY = JSON.stringify({ query: '{ __typename }' });
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };

function expectMethodNotAllowed(res: Sent, withBody = true) {
  expect(res.status, res.text).toBe(405);
  expect(res.headers.allow).toBe('GET, POST');
  if (!withBody) return expect(res.text).toBe('');
  expect(res.headers['content-type']).toMatch(/^application\/(graphql-response\+)?json/);
  expect(res.json).toEqual({ errors: [{ message: expect.any(String), extensions: { code: 'METHOD_NOT_ALLOWED' } }] });
}

describe('/graphql: GET and POST only', () => {
  it('still serves GET and POST', async () => {
    expect(withoutCost((await send(server.url, 'POST', '/graphql', JSON_HEADERS, QUERY)).json)).toEqual({ data: { __typename: 'Query' } });
    const get = await send(server.url, 'GET', '/graphql?query=%7B__typename%7D', { accept: 'application/json' });
    expect(withoutCost(get.json)).toEqual({ data: { __typename: 'Query' } });
  });

  it.each(['PUT', 'PATCH', 'DELETE'])('refuses %s, with a body or without', async (method) => {
    expectMethodNotAllowed(await send(server.url, method, '/graphql', JSON_HEADERS, QUERY));
    expectMethodNotAllowed(await send(server.url, method, '/graphql'));
  });

  it('refuses an OPTIONS that is not a CORS preflight (no Origin, or no Access-Control-Request-Method)', async () => {
    expectMethodNotAllowed(await send(server.url, 'OPTIONS', '/graphql'));
    expectMethodNotAllowed(await send(server.url, 'OPTIONS', '/graphql', { origin: 'http://localhost:5173' }));
    expectMethodNotAllowed(await send(server.url, 'OPTIONS', '/graphql', { 'access-control-request-method': 'POST' }));
    // The preflight itself is CORS's (test/http/cors.test.ts).
    const preflight = await send(server.url, 'OPTIONS', '/graphql', { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' });
    expect(preflight.status).toBe(204);
  });

  it('refuses HEAD: the operation is not run to have its result dropped', async () => {
    const head = await send(server.url, 'HEAD', `/graphql?query=${encodeURIComponent('{ __typename }')}`);
    expectMethodNotAllowed(head, false);
    expect(head.headers['x-ratelimit-remaining']).toBeUndefined(); // refused before the limiter, too
  });

  it.each(['TRACE', 'QUERY', 'PROPFIND', 'PURGE', 'LOCK', 'MKCOL'])('refuses %s, a method Fastify may not even route', async (method) => {
    expectMethodNotAllowed(await send(server.url, method, '/graphql'));
    expectMethodNotAllowed(await send(server.url, method, '/graphql', JSON_HEADERS, QUERY));
  });

  it('decides on the method before reading the body: no 413, 415 or 400 first', async () => {
    expectMethodNotAllowed(await send(server.url, 'PUT', '/graphql', JSON_HEADERS, Buffer.alloc(2 * 1_048_576, 0x20)));
    expectMethodNotAllowed(await send(server.url, 'PATCH', '/graphql', { 'content-type': 'application/xml' }, '<q/>'));
    expectMethodNotAllowed(await send(server.url, 'DELETE', '/graphql', JSON_HEADERS, '{ not json'));
    expectMethodNotAllowed(await send(server.url, 'QUERY', '/graphql', {}, QUERY)); // QUERY needs a Content-Type
  });

  it('a mutation over GET stays a 405 of its own: that operation may only be POSTed', async () => {
    const res = await send(server.url, 'GET', `/graphql?query=${encodeURIComponent('mutation { addBook(title: "T", author: "A") { id } }')}`, { accept: 'application/json' });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('POST');
    expect(res.json.errors[0].extensions.code).toBe('METHOD_NOT_ALLOWED');
  });
});

describe('unknown paths: 404 {error: "Not found"}', () => {
  it.each([
    ['GET', '/nope'],
    ['GET', '/graphql/'],
    ['GET', '/graphql/extra'],
    ['POST', '/graphqlx'],
    ['GET', '/api'],
    ['GET', '/api/nope'],
    ['GET', '/api/auth/nope'],
    ['POST', '/api/auth/nope'],
    ['DELETE', '/healthz'],
    ['PUT', '/login'],
    ['OPTIONS', '/login'],
    ['PROPFIND', '/nope'],
  ])('%s %s', async (method, path) => {
    const res = await send(server.url, method, path);
    expect(res.status, res.text).toBe(404);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json).toEqual({ error: 'Not found' });
  });

  it('answers before reading a body: a malformed or oversized one to nowhere is still a 404', async () => {
    for (const path of ['/nope', '/api/auth/nope', '/api/nope']) {
      const bad = await send(server.url, 'POST', path, { 'content-type': 'application/json' }, '{ not json');
      expect([bad.status, bad.json]).toEqual([404, { error: 'Not found' }]);
      const form = await send(server.url, 'POST', path, { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1');
      expect([form.status, form.json]).toEqual([404, { error: 'Not found' }]);
    }
    const big = await send(server.url, 'POST', '/nope', { 'content-type': 'application/json' }, Buffer.alloc(2 * 1_048_576, 0x20));
    expect([big.status, big.json]).toEqual([404, { error: 'Not found' }]);
  });

  it('leaves known paths alone', async () => {
    expect((await send(server.url, 'GET', '/healthz')).status).toBe(200);
    expect((await send(server.url, 'GET', '/api/auth/providers')).status).toBe(200);
    expect((await send(server.url, 'GET', '/api/me')).json).toEqual({ error: 'Not signed in' });
  });
});
