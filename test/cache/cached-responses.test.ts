import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../src/graphql/http/route.js';
import { signIn, type SignedIn } from '../helpers/auth.js';
import { RawClient, headerOf, rawPost, type HttpResponse } from '../helpers/raw-http.js';
import { startServer, type TestServer, withoutCost } from '../helpers/server.js';

/**
 * Cached responses over real HTTP (src/cache/response-cache.ts): a repeated
 * query is answered from the cache, byte for byte what execution answered, rate-limit
 * headers included and counted once per request; credentials get their own entries;
 * malformed or odd requests are refused as they would be uncached.
 * `server.inkwell.responseCache.stats.hits` tells whether an answer came from the cache.
 */

// Fixed windows are aligned to the epoch: one day makes straddling a boundary mid-test
// (and a counter reset between two requests) practically impossible.
const DAY_WINDOW = { RATE_LIMIT_WINDOW_MS: '86400000' };

let server: TestServer;
let admin: SignedIn;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto', ...DAY_WINDOW });
  admin = await signIn(server, 'admin@inkwell.test');
});
afterAll(() => server.close());

interface Raw {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

async function rawOf(response: Response): Promise<Raw> {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, text, body };
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };

/** POSTs a raw body to /graphql on `target`. */
async function post(body: string, headers: Record<string, string> = JSON_HEADERS, target: TestServer = server): Promise<Raw> {
  return rawOf(await fetch(`${target.url}/graphql`, { method: 'POST', headers, body }));
}

/** POSTs `{query, ...}` as JSON. */
const postQuery = (query: string, headers: Record<string, string> = {}, target: TestServer = server, extra: object = {}) =>
  post(JSON.stringify({ query, ...extra }), { ...JSON_HEADERS, ...headers }, target);

/** GET /graphql with the given search parameters. */
async function get(params: Record<string, string>, headers: Record<string, string> = { accept: 'application/json' }): Promise<Raw> {
  return rawOf(await fetch(`${server.url}/graphql?${new URLSearchParams(params)}`, { headers }));
}

const hits = (target: TestServer = server) => target.inkwell.responseCache!.stats.hits;

/** Runs one request and tells whether it was answered from the response cache. */
async function through<T>(send: () => Promise<T>, target: TestServer = server): Promise<{ res: T; front: boolean }> {
  const before = hits(target);
  const res = await send();
  const after = hits(target);
  expect(after - before).toBeLessThanOrEqual(1);
  return { res, front: after === before + 1 };
}

/** A query text used by one test only, so no other test warmed its cache entry. */
let unique = 0;
const booksQuery = (fields = 'id title') => `query Cached${++unique} { books(limit: 3) { ${fields} } }`;

const remaining = (res: Raw) => Number(res.headers.get('x-ratelimit-remaining'));

describe('a repeated anonymous query', () => {
  it('is answered from the cache, byte-identical to the executed answer, counting each request once', async () => {
    const query = booksQuery();
    const first = await through(() => postQuery(query));
    const second = await through(() => postQuery(query));
    const third = await through(() => postQuery(query));
    expect(first.front).toBe(false);
    expect(second.front).toBe(true);
    expect(third.front).toBe(true);

    expect(first.res.status).toBe(200);
    expect(first.res.body.data.books).toHaveLength(3);
    for (const { res } of [second, third]) {
      expect(res.status).toBe(first.res.status);
      expect(withoutCost(res.text)).toBe(withoutCost(first.res.text));
      expect(res.headers.get('content-type')).toBe(first.res.headers.get('content-type'));
      expect(res.headers.get('content-length')).toBe(String(Buffer.byteLength(res.text)));
    }
    expect(first.res.headers.get('content-type')).toBe('application/graphql-response+json; charset=utf-8');

    // The same rate-limit headers, hit or miss, on the same counter, one count per request.
    for (const { res } of [first, second, third]) {
      expect(res.headers.get('x-ratelimit-limit')).toBe('100000');
      expect(Number(res.headers.get('x-ratelimit-reset'))).toBeGreaterThanOrEqual(1);
    }
    expect(remaining(second.res)).toBe(remaining(first.res) - 1);
    expect(remaining(third.res)).toBe(remaining(second.res) - 1);
    // And through execution (a first-time text) the count goes on from there.
    const route = await through(() => postQuery(booksQuery()));
    expect(route.front).toBe(false);
    expect(remaining(route.res)).toBe(remaining(third.res) - 1);
  });

  it('a hit carries the same set of headers as the executed answer', async () => {
    const query = booksQuery();
    const names = (res: Raw) => [...res.headers.keys()].filter((n) => n !== 'date').sort();
    const first = await through(() => postQuery(query));
    const second = await through(() => postQuery(query));
    expect(second.front).toBe(true);
    expect(names(second.res)).toEqual(names(first.res));
  });

  it('honours Accept: graphql-response+json and application/json for the same body', async () => {
    const query = booksQuery();
    const body = JSON.stringify({ query });
    const warm = await post(body);
    const modern = await through(() => post(body, { 'content-type': 'application/json', accept: 'application/graphql-response+json' }));
    const legacy1 = await through(() => post(body, { 'content-type': 'application/json', accept: 'application/json' }));
    const legacy2 = await through(() => post(body, { 'content-type': 'application/json', accept: 'application/json' }));
    expect(modern.front).toBe(true);
    expect(modern.res.headers.get('content-type')).toBe('application/graphql-response+json; charset=utf-8');
    // A text seen with one Accept header is probed again with another; either way the answer fits.
    for (const { res } of [legacy1, legacy2]) {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(withoutCost(res.text)).toBe(withoutCost(warm.text));
    }
    expect(legacy2.front).toBe(true);
    expect(withoutCost(modern.res.text)).toBe(withoutCost(warm.text));
  });

  it('refuses an Accept header it cannot answer (406), even for a cached text', async () => {
    const query = booksQuery();
    await postQuery(query);
    await postQuery(query);
    const refused = await through(() => postQuery(query, { accept: 'text/plain' }));
    expect(refused.front).toBe(false);
    expect(refused.res.status).toBe(406);
  });
});

describe('credentials get entries of their own, never the anonymous one', () => {
  const usersQuery = '{ users(limit: 100) { id email } }';
  const emails = (res: Raw) => (res.body.data.users as { email: string | null }[]).map((u) => u.email);

  beforeAll(async () => {
    // Cached for the anonymous caller: a credential must not be answered from it.
    await postQuery(usersQuery);
    const warm = await through(() => postQuery(usersQuery));
    expect(warm.front).toBe(true);
  });

  it('a valid bearer token: the signed-in admin sees emails', async () => {
    for (let i = 0; i < 2; i++) {
      const { res, front } = await through(() => postQuery(usersQuery, admin.headers));
      expect(front).toBe(i === 1);
      expect(res.status).toBe(200);
      expect(emails(res).length).toBeGreaterThan(0);
      expect(emails(res).every((e) => typeof e === 'string' && e.includes('@'))).toBe(true);
    }
  });

  it('a garbage bearer token: refused with 401, never answered from the anonymous entry', async () => {
    for (let i = 0; i < 2; i++) {
      const { res, front } = await through(() => postQuery(usersQuery, { authorization: 'Bearer not-a-token' }));
      expect(front).toBe(false);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
      expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    }
  });

  it('an auth-token cookie: the signed-in admin sees emails', async () => {
    expect(admin.cookie).toBeDefined();
    for (let i = 0; i < 2; i++) {
      const { res } = await through(() => postQuery(usersQuery, { cookie: `theme=dark; ${admin.cookie!}` }));
      expect(res.status).toBe(200);
      expect(emails(res).every((e) => typeof e === 'string' && e.includes('@'))).toBe(true);
    }
  });

  it('a garbage auth-token cookie: refused with 401 and the cookie cleared', async () => {
    const { res, front } = await through(() => postQuery(usersQuery, { cookie: 'auth-token=garbage' }));
    expect(front).toBe(false);
    expect(res.status).toBe(401);
    expect(res.body.errors[0].extensions.code).toBe('UNAUTHENTICATED');
    expect(res.headers.getSetCookie().some((c) => c.startsWith('auth-token=;') && /Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(c))).toBe(true);
  });

  it('a credential over GET too', async () => {
    const { res } = await through(() => get({ query: usersQuery }, { accept: 'application/json', ...admin.headers }));
    expect(emails(res).every((e) => typeof e === 'string')).toBe(true);
  });
});

describe('writes and odd bodies', () => {
  it('a mutation after cached reads is stored, and the next anonymous read is never stale', async () => {
    const query = '{ books(limit: 100) { id title } }';
    const titles = (res: Raw) => (res.body.data.books as { title: string }[]).map((b) => b.title);
    await postQuery(query);
    const cached = await through(() => postQuery(query));
    expect(cached.front).toBe(true);
    const title = `Cached ${Date.now()}`;
    expect(titles(cached.res)).not.toContain(title);

    const mutation = 'mutation ($title: String!) { addBook(title: $title, author: "Somebody") { id title } }';
    const added = await through(() => post(JSON.stringify({ query: mutation, variables: { title } }), { ...JSON_HEADERS, ...admin.headers }));
    expect(added.front).toBe(false);
    expect(added.res.status).toBe(200);
    expect(added.res.body.errors).toBeUndefined();
    expect(added.res.body.data.addBook.title).toBe(title);

    const after = await through(() => postQuery(query));
    expect(after.front).toBe(false);
    expect(after.res.status).toBe(200);
    expect(titles(after.res)).toContain(title);
    // The fresh answer is cached again and served from the cache.
    const again = await through(() => postQuery(query));
    expect(again.front).toBe(true);
    expect(withoutCost(again.res.text)).toBe(withoutCost(after.res.text));
  });

  it('an anonymous mutation is executed every time (refused there, never cached)', async () => {
    const body = JSON.stringify({ query: 'mutation { addBook(title: "Nope", author: "Nobody") { id } }' });
    for (let i = 0; i < 2; i++) {
      const { res, front } = await through(() => post(body));
      expect(front).toBe(false);
      expect(res.status).toBe(200);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    }
  });

  it('a malformed JSON body answers 400 BAD_REQUEST', async () => {
    const { res, front } = await through(() => post('{"query": "{ __typename }"'));
    expect(front).toBe(false);
    expect(res.status).toBe(400);
    expect(res.body).not.toHaveProperty('data');
    expect(res.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  });

  it('Content-Type: text/plain answers 415, even with the body of a cached query', async () => {
    const body = JSON.stringify({ query: booksQuery() });
    await post(body);
    expect((await through(() => post(body))).front).toBe(true);
    const { res, front } = await through(() => post(body, { 'content-type': 'text/plain', accept: 'application/json' }));
    expect(front).toBe(false);
    expect(res.status).toBe(415);
    expect(res.body.errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('a chunked body (no Content-Length) works, and is answered from the cache', async () => {
    const query = booksQuery();
    const warm = await postQuery(query);
    const before = hits();
    const body = JSON.stringify({ query });
    const res = await new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
      const req = httpRequest(`${server.url}/graphql`, { method: 'POST', headers: JSON_HEADERS }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, text }));
        response.on('error', reject);
      });
      req.on('error', reject);
      // Two writes without a Content-Length: Node frames the body as chunked.
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    });
    expect(hits()).toBe(before + 1);
    expect(res.status).toBe(200);
    expect(withoutCost(res.text)).toBe(withoutCost(warm.text));
  });

  it('a valid body over 16 KiB (padded whitespace or a long comment) answers 200', async () => {
    const query = booksQuery();
    const warm = await postQuery(query);
    const bigWhitespace = JSON.stringify({ query }) + ' '.repeat(20 * 1024);
    const bigComment = JSON.stringify({ query: `# ${'x'.repeat(20 * 1024)}\n${query}` });
    for (const body of [bigWhitespace, bigComment]) {
      expect(Buffer.byteLength(body)).toBeGreaterThan(16 * 1024);
      const { res } = await through(() => post(body));
      expect(res.status).toBe(200);
      expect(withoutCost(res.body)).toEqual(withoutCost(warm.body));
    }
  });

  it('a padded body of exactly 16 KiB is answered whole, from the cache the second time', async () => {
    const query = booksQuery();
    const head = JSON.stringify({ query });
    const body = head + ' '.repeat(16 * 1024 - head.length);
    expect(Buffer.byteLength(body)).toBe(16 * 1024);
    const first = await through(() => post(body));
    const second = await through(() => post(body));
    expect(first.res.status).toBe(200);
    expect(first.res.body.data.books).toHaveLength(3);
    expect(second.front).toBe(true);
    expect(withoutCost(second.res.text)).toBe(withoutCost(first.res.text));
  });

  it('a body over 1 MiB answers 413 PAYLOAD_TOO_LARGE', async () => {
    const head = '{"query":"{ __typename }"';
    const body = head + ' '.repeat(MAX_BODY_BYTES + 1 - head.length - 1) + '}';
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES + 1);
    const { res, front } = await through(() => post(body));
    expect(front).toBe(false);
    expect(res.status).toBe(413);
    expect(res.body.errors[0].extensions.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('several requests at once each get their own answer', async () => {
    // Each text has an alias of its own: a body handed to the wrong request would show.
    const texts = Array.from({ length: 8 }, (_, i) => `query Parallel${i} { p${i}: books(limit: ${(i % 3) + 1}) { id } }`);
    const answers = await Promise.all(texts.map((q) => postQuery(q)));
    answers.forEach((res, i) => {
      expect(res.status).toBe(200);
      expect(Object.keys(res.body.data)).toEqual([`p${i}`]);
      expect(res.body.data[`p${i}`]).toHaveLength((i % 3) + 1);
    });
  });
});

describe('GET', () => {
  it('a cached ?query= is answered from the cache, identical to the executed answer', async () => {
    const query = booksQuery();
    const first = await through(() => get({ query }));
    const second = await through(() => get({ query }));
    const third = await through(() => get({ query }));
    expect(first.front).toBe(false);
    expect(second.front).toBe(true);
    expect(third.front).toBe(true);
    expect(first.res.status).toBe(200);
    expect(first.res.body.data.books).toHaveLength(3);
    expect(withoutCost(second.res.text)).toBe(withoutCost(first.res.text));
    expect(withoutCost(third.res.text)).toBe(withoutCost(first.res.text));
    expect(second.res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(remaining(third.res)).toBe(remaining(second.res) - 1);
  });

  it('a mutation over GET answers 405', async () => {
    const { res, front } = await through(() => get({ query: 'mutation { addBook(title: "x", author: "y") { id } }' }));
    expect(front).toBe(false);
    expect(res.status).toBe(405);
  });

  it('outside production, Accept: text/html without a query still serves GraphiQL', async () => {
    for (const path of ['/graphql', '/graphql?', '/graphql?operationName=x']) {
      const before = hits();
      const response = await fetch(`${server.url}${path}`, { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
      expect(hits(), path).toBe(before);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type'), path).toMatch(/^text\/html/);
      expect(await response.text(), path).toContain('GraphiQL');
    }
  });
});

describe('persisted queries (APQ)', () => {
  it('a registered hash is answered correctly, twice, over POST and GET', async () => {
    const query = booksQuery('id title author');
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };

    // Unknown yet: nothing to answer from.
    const unknown = await through(() => post(JSON.stringify({ extensions })));
    expect(unknown.front).toBe(false);
    expect(unknown.res.body.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');

    const registered = await through(() => postQuery(query, {}, server, { extensions }));
    expect(registered.front).toBe(false);
    expect(registered.res.status).toBe(200);
    expect(registered.res.body.data.books).toHaveLength(3);

    const before = hits();
    const hashOnly = [
      await post(JSON.stringify({ extensions })),
      await post(JSON.stringify({ extensions })),
      await get({ extensions: JSON.stringify(extensions) }, { accept: 'application/graphql-response+json' }),
      await get({ extensions: JSON.stringify(extensions) }, { accept: 'application/graphql-response+json' }),
    ];
    for (const res of hashOnly) {
      expect(res.status).toBe(200);
      expect(withoutCost(res.text)).toBe(withoutCost(registered.res.text));
    }
    // Cached under the registered text: the hash alone is a hit.
    expect(hits()).toBeGreaterThan(before);
  });
});

describe('rate limiting of cached answers', () => {
  const servers: TestServer[] = [];
  afterAll(() => Promise.all(servers.map((s) => s.close())));
  const limitedServer = async (env: Record<string, string>) => {
    const s = await startServer({ ...DAY_WINDOW, ...env });
    servers.push(s);
    return s;
  };

  /** The 429 the route answers: Retry-After and RATE_LIMITED. */
  function expectLimited(res: Raw) {
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(res.body.errors[0].extensions.code).toBe('RATE_LIMITED');
  }

  it('RATE_LIMIT_MAX=5: five requests pass, hits and misses alike, the sixth cached one gets 429', async () => {
    const s = await limitedServer({ RATE_LIMIT_MAX: '5' });
    const a = '{ books(limit: 2) { id } }';
    const b = '{ books(limit: 1) { title } }';
    const sequence = [a, a, b, b, a];
    const expectedFront = [false, true, false, true, true];
    const results = [];
    for (const q of sequence) results.push(await through(() => postQuery(q, {}, s), s));
    results.forEach(({ res, front }, i) => {
      expect(res.status, `request ${i + 1}`).toBe(200);
      expect(front, `request ${i + 1}`).toBe(expectedFront[i]);
      expect(remaining(res), `request ${i + 1}`).toBe(4 - i);
    });
    const sixth = await through(() => postQuery(a, {}, s), s);
    expect(sixth.front).toBe(false);
    expectLimited(sixth.res);
    // GET on the same counter is limited too.
    const viaGet = await through(
      async () => rawOf(await fetch(`${s.url}/graphql?query=${encodeURIComponent(a)}`, { headers: { accept: 'application/json' } })),
      s,
    );
    expect(viaGet.front).toBe(false);
    expectLimited(viaGet.res);
  });

  it('TRUST_PROXY=true: limits count by the first X-Forwarded-For address, hits and misses alike', async () => {
    const s = await limitedServer({ RATE_LIMIT_MAX: '3', TRUST_PROXY: 'true' });
    const q = '{ books(limit: 2) { id title } }';
    const from = (xff: string) => through(() => postQuery(q, { 'x-forwarded-for': xff }, s), s);
    const first = await from('203.0.113.7');
    // The client is the first entry, whatever proxies follow it.
    const second = await from('203.0.113.7, 198.51.100.1');
    const third = await from('203.0.113.7');
    expect([first.front, second.front, third.front]).toEqual([false, true, true]);
    for (const { res } of [first, second, third]) expect(res.status).toBe(200);
    expect([first, second, third].map(({ res }) => remaining(res))).toEqual([2, 1, 0]);

    const fourth = await from('203.0.113.7');
    expect(fourth.front).toBe(false);
    expectLimited(fourth.res);

    const other = await from('203.0.113.8');
    expect(other.res.status).toBe(200);
    expect(other.front).toBe(true);
    expect(remaining(other.res)).toBe(2);
    expect(withoutCost(other.res.text)).toBe(withoutCost(first.res.text));

    // An odd header (an empty first entry): whichever client it names, hits and misses agree.
    const odd = ', 203.0.113.20';
    const viaRoute = await through(() => postQuery('{ books(limit: 1) { id } }', { 'x-forwarded-for': odd }, s), s);
    const viaFront = await from(odd);
    expect([viaRoute.front, viaFront.front]).toEqual([false, true]);
    expect(remaining(viaFront.res)).toBe(remaining(viaRoute.res) - 1);
  });
});

describe('one connection, raw bytes', () => {
  const open: RawClient[] = [];
  const connection = async (target: TestServer = server) => {
    const c = await RawClient.connect(Number(new URL(target.url).port));
    open.push(c);
    return c;
  };
  afterAll(() => open.forEach((c) => c.socket.destroy()));

  it('pipelined in one write: hit, miss, signed-in, other route, hit — answered in order', async () => {
    const c = await connection();
    const cached = JSON.stringify({ query: booksQuery() });
    await postQuery(JSON.parse(cached).query);
    const warm = await postQuery(JSON.parse(cached).query);
    const fresh = JSON.stringify({ query: booksQuery('id') });
    const mine = JSON.stringify({ query: '{ me { email role } }' });
    const before = hits();
    c.write(
      rawPost(cached) +
        rawPost(fresh) +
        rawPost(mine, { authorization: `Bearer ${admin.accessToken}` }) +
        'GET /healthz HTTP/1.1\r\nhost: inkwell.test\r\n\r\n' +
        rawPost(cached),
    );
    const responses = [];
    for (let i = 0; i < 5; i++) responses.push(await c.response());
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(withoutCost(responses[0]!.text)).toBe(withoutCost(warm.text));
    expect(JSON.parse(responses[1]!.text).data.books[0]).toEqual({ id: expect.any(String) });
    expect(JSON.parse(responses[2]!.text).data.me).toEqual({ email: 'admin@inkwell.test', role: 'admin' });
    expect(JSON.parse(responses[3]!.text)).toMatchObject({ status: expect.any(String) });
    expect(withoutCost(responses[4]!.text)).toBe(withoutCost(warm.text));
    expect(hits()).toBe(before + 2);
    // One count per request, in order.
    const counts = [responses[0]!, responses[1]!, responses[4]!].map((r) => Number(headerOf(r, 'x-ratelimit-remaining')));
    expect(counts).toEqual([counts[0], counts[0]! - 1, counts[0]! - 2]);
  });


  it('a WebSocket upgrade after a request works on the same connection', async () => {
    const c = await connection();
    c.write(rawPost(JSON.stringify({ query: booksQuery() })));
    expect((await c.response()).status).toBe(200);
    c.write(
      'GET /graphql HTTP/1.1\r\nhost: inkwell.test\r\nupgrade: websocket\r\nconnection: Upgrade\r\n' +
        'sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-version: 13\r\nsec-websocket-protocol: graphql-transport-ws\r\n\r\n',
    );
    const upgraded = await new Promise<string>((resolve, reject) => {
      let text = '';
      const onData = (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if (text.includes('\r\n\r\n')) {
          c.socket.off('data', onData);
          resolve(text);
        }
      };
      c.socket.on('data', onData);
      setTimeout(() => reject(new Error('no upgrade response')), 5000);
    });
    expect(upgraded).toMatch(/^HTTP\/1\.1 101 /);
    // A masked text frame with connection_init; the server answers connection_ack.
    const payload = Buffer.from(JSON.stringify({ type: 'connection_init' }));
    const mask = Buffer.from([1, 2, 3, 4]);
    const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]!));
    const ack = new Promise<string>((resolve) => c.socket.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8'))));
    c.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]));
    expect(await ack).toContain('connection_ack');
  });


  it('shutdown closes an idle keep-alive connection after its answer', async () => {
    const s = await startServer();
    const query = '{ books(limit: 1) { id } }';
    await postQuery(query, {}, s);
    const c = await connection(s);
    c.write(rawPost(JSON.stringify({ query })));
    await c.response();
    expect(hits(s)).toBe(1);
    const closing = s.close();
    expect(await c.waitClosed(3000)).toBe(true);
    await closing;
  });
});
