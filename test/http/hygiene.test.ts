import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { headerOf, rawPost, RawClient } from '../helpers/raw-http.js';
import { signIn } from '../helpers/auth.js';
import { startServer, type TestServer } from '../helpers/server.js';

/**
 * docs/limits.md, "HTTP hygiene": a request with two Host headers is refused (RFC 9112),
 * and the answer to any request that carries a credential says
 * `Cache-Control: private, no-store`, so no shared cache in front keeps one caller's data.
 */
let server: TestServer;
let port: number;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  port = Number(new URL(server.url).port);
});

afterAll(async () => {
  await server?.close();
});

async function raw(request: string) {
  const client = await RawClient.connect(port);
  client.write(request);
  const response = await client.response();
  client.socket.destroy();
  return response;
}

describe('duplicate Host', () => {
  it('answers 400 on /graphql (GraphQL error body), /api and pages, before any work', async () => {
    const query = JSON.stringify({ query: '{ __typename }' });
    const graphql = await raw(rawPost(query).replace('host: inkwell.test\r\n', 'host: inkwell.test\r\nHost: evil.test\r\n'));
    expect(graphql.status).toBe(400);
    expect(JSON.parse(graphql.text).errors[0].extensions.code).toBe('BAD_REQUEST');

    const api = await raw('GET /api/me HTTP/1.1\r\nHost: a.test\r\nHOST: b.test\r\n\r\n');
    expect(api.status).toBe(400);
    expect(JSON.parse(api.text)).toEqual({ error: expect.any(String) });

    const page = await raw('GET /login HTTP/1.1\r\nhost: a.test\r\nhost: a.test\r\n\r\n');
    expect(page.status).toBe(400);
  });

  it('refuses a WebSocket upgrade with two Host headers too', async () => {
    const upgrade = (hosts: string) =>
      `GET /graphql HTTP/1.1\r\n${hosts}Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n`;
    expect((await raw(upgrade('Host: a.test\r\nHost: b.test\r\n'))).status).toBe(400);
    expect((await raw(upgrade('Host: a.test\r\n'))).status).toBe(101);
  });

  it('one Host is served as usual', async () => {
    const one = await raw(rawPost(JSON.stringify({ query: '{ __typename }' })));
    expect(one.status).toBe(200);
  });
});

describe('Cache-Control on answers to requests with a credential', () => {
  it('GET and POST /graphql with a Bearer token: private, no-store', async () => {
    const { headers } = await signIn(server, 'alice@inkwell.test');
    const get = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ me { email } }')}`, { headers });
    expect(get.status).toBe(200);
    expect(((await get.json()) as any).data.me.email).toBe('alice@inkwell.test');
    expect(get.headers.get('cache-control')).toBe('private, no-store');
    const post = await server.gql('{ me { email } }', undefined, { headers });
    expect(post.headers.get('cache-control')).toBe('private, no-store');
    // A cached answer (the second ask) says so too.
    const again = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ me { email } }')}`, { headers });
    expect(again.headers.get('cache-control')).toBe('private, no-store');
  });

  it('with the session cookie, and with a refused credential (the 401) too', async () => {
    const { cookie } = await signIn(server, 'bob@inkwell.test');
    const byCookie = await server.gql('{ me { email } }', undefined, { headers: { cookie: cookie! } });
    expect(byCookie.body.data).toEqual({ me: { email: 'bob@inkwell.test' } });
    expect(byCookie.headers.get('cache-control')).toBe('private, no-store');
    const refused = await server.gql('{ me { email } }', undefined, { headers: { authorization: 'Bearer not-a-token' } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('cache-control')).toBe('private, no-store');
  });

  it('the /api JSON answers: private, no-store', async () => {
    const { headers } = await signIn(server, 'carol@inkwell.test');
    const me = await fetch(`${server.url}/api/me`, { headers });
    expect(me.status).toBe(200);
    expect(me.headers.get('cache-control')).toBe('private, no-store');
  });

  it('an anonymous query is not marked private', async () => {
    const anonymous = await fetch(`${server.url}/graphql?query=${encodeURIComponent('{ posts(limit: 1) { id } }')}`);
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get('cache-control') ?? '').not.toContain('private');
  });
});
