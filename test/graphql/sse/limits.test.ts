import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startServer, wsUrl, type TestServer } from '../../helpers/server.js';
import { account, collect, eventually, once, post, refusalOf, sseClient, waitFor, type Collected } from './helpers.js';

/*
 * The bounds of docs/limits.md over SSE: the request rate limit, the caps on long-lived
 * connections (shared with the WebSocket), and clients that stop reading.
 */

const metric = async (server: TestServer, name: string): Promise<number> => {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? NaN);
};

describe('the request rate limit', () => {
  let server: TestServer;
  beforeAll(async () => {
    // A day-long window: the count cannot start over while the test runs.
    server = await startServer({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '86400000' });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('each stream is a request: past RATE_LIMIT_MAX the next answers 429 RATE_LIMITED with Retry-After, before any stream', async () => {
    const client = sseClient(server);
    for (let i = 0; i < 3; i++) {
      const ok = await once(client, { query: '{ me { id } }' });
      expect(ok.error).toBeUndefined();
      expect(ok.completed).toBe(true);
    }
    const refused = await once(client, { query: 'subscription { userCreated { id } }' });
    expect(refused.results).toEqual([]);
    const refusal = await refusalOf(refused.error);
    expect(refusal.status).toBe(429);
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refusal.body).toEqual({ error: 'Too many requests', errors: [expect.objectContaining({ extensions: { code: 'RATE_LIMITED' } })] });
  });
});

describe('the cost bucket (docs/limits.md, "Cost")', () => {
  let server: TestServer;
  beforeAll(async () => {
    // Subscriptions pay their complexity when they start (401 here) and get nothing back;
    // the bucket regains a point a second, so the third cannot be paid for minutes.
    server = await startServer({ COST_LIMIT: '900', COST_RESTORE_PER_S: '1' });
  });
  afterAll(async () => {
    await server?.close();
  });

  const costly = 'subscription { userCreated { posts(limit: 100) { reactions(limit: 3) { id } } } }';

  it('a result and each event carry extensions.cost; a subscription the bucket cannot pay is 429 before any stream', async () => {
    const query = await once(sseClient(server), { query: '{ books(limit: 5) { id } }' });
    expect(query.results[0]?.extensions).toEqual({
      cost: { requestedQueryCost: 5, actualQueryCost: 0, throttleStatus: { maximumAvailable: 900, currentlyAvailable: expect.any(Number), restoreRate: 1 } },
    });

    const first = collect(sseClient(server), { query: costly });
    const second = collect(sseClient(server), { query: costly });
    await Promise.all([first.connected, second.connected]);
    const third = await once(sseClient(server), { query: costly });
    expect(third.results).toEqual([]);
    const refusal = await refusalOf(third.error);
    expect(refusal.status).toBe(429);
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refusal.body.errors).toEqual([expect.objectContaining({ extensions: { code: 'RATE_LIMITED' } })]);
    expect(refusal.body.extensions.cost).toMatchObject({ requestedQueryCost: 401, actualQueryCost: null });
    expect(await (await fetch(`${server.url}/metrics`)).text()).toMatch(/^inkwell_cost_refusals_total\{transport="sse",reason="bucket"\} 1$/m);

    await server.inkwell.services.users.insertAccount({ name: 'Costly', email: 'costly@example.test', role: 'user' });
    await waitFor(() => first.results.length === 1, 15_000, 'the event');
    expect(first.results[0]?.data).toEqual({ userCreated: { posts: [] } });
    expect(first.results[0]?.extensions).toEqual({ cost: expect.objectContaining({ requestedQueryCost: 401 }) });
    first.stop();
    second.stop();
  });

  it('an operation costlier than a whole bucket is refused in the stream (MAX_COMPLEXITY), with its cost', async () => {
    const result = await once(sseClient(server), { query: '{ users(limit: 100) { posts(limit: 9) { id } } }' });
    expect(result.results).toHaveLength(1);
    expect(result.results[0]?.errors?.map((e) => e.extensions?.['code'])).toEqual(['MAX_COMPLEXITY']);
    expect(result.results[0]?.extensions).toEqual({ cost: expect.objectContaining({ requestedQueryCost: 1000, actualQueryCost: null }) });
    expect(result.completed).toBe(true);
  });
});

describe('connection caps, shared with the WebSocket', () => {
  let server: TestServer;
  const open: Collected<unknown>[] = [];
  beforeAll(async () => {
    server = await startServer({ TRUST_PROXY: 'true', WS_MAX_CONNECTIONS_PER_CLIENT: '2', WS_MAX_CONNECTIONS: '4' });
  });
  afterAll(async () => {
    for (const stream of open) stream.stop();
    await server?.close();
  });

  const from = (ip: string) => sseClient(server, { headers: { 'x-forwarded-for': ip } });
  const subscribe = async (ip: string): Promise<Collected<unknown>> => {
    const stream = collect(from(ip), { query: 'subscription { userCreated { id } }' });
    open.push(stream);
    await stream.connected;
    return stream;
  };

  it('a client holding its share (streams and sockets together) is refused 429 RATE_LIMITED; a closed stream frees its place', async () => {
    const first = await subscribe('192.0.2.10');
    expect(first.error).toBeUndefined();
    // The second place is a WebSocket from the same client.
    const socket = new WebSocket(wsUrl(server), 'graphql-transport-ws', { headers: { 'x-forwarded-for': '192.0.2.10' } });
    await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));

    const third = await subscribe('192.0.2.10');
    const refusal = await refusalOf(third.error);
    expect(refusal.status).toBe(429);
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refusal.body.errors).toEqual([expect.objectContaining({ extensions: { code: 'RATE_LIMITED' } })]);
    // A query is a stream too, for as long as it is open: refused alike.
    expect((await refusalOf((await once(from('192.0.2.10'), { query: '{ me { id } }' })).error)).status).toBe(429);
    // Another client is not affected.
    expect((await subscribe('192.0.2.11')).error).toBeUndefined();

    first.stop();
    await eventually(async () => (await metric(server, 'inkwell_sse_streams')) === 1, 'the closed stream released');
    const again = await subscribe('192.0.2.10');
    expect(again.error).toBeUndefined();
    socket.close();
  });

  it('a full instance refuses anyone 503 OVERLOADED with Retry-After', async () => {
    for (const stream of open.splice(0)) stream.stop();
    await eventually(async () => (await metric(server, 'inkwell_sse_streams')) === 0, 'every stream released');
    await Promise.all(['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'].map(subscribe));
    const refused = await subscribe('198.51.100.5');
    const refusal = await refusalOf(refused.error);
    expect(refusal.status).toBe(503);
    expect(Number(refusal.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refusal.body.errors).toEqual([expect.objectContaining({ extensions: { code: 'OVERLOADED' } })]);
  });
});

describe('a client that stops reading', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('is cut once its unsent events pass the bound, and its subscription released; other streams go on', async () => {
    const editor = await account(server, 'editor', 'Bulky Editor');
    const bulky = await post(server, editor.user, { content: 'x'.repeat(50_000) });
    const query = 'subscription ($id: ID!) { postReactionAdded(postId: $id) { type post { content } } }';

    // A raw client that sends its request and never reads a byte of the answer.
    const stalled = connect(Number(new URL(server.url).port), '127.0.0.1');
    await new Promise((resolve) => stalled.once('connect', resolve));
    stalled.pause();
    const body = JSON.stringify({ query, variables: { id: bulky.id } });
    stalled.write(
      `POST /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const closed = new Promise((resolve) => stalled.once('close', resolve));
    stalled.on('error', () => {});

    // A client that reads, on the same post.
    const reading = collect(sseClient(server), { query, variables: { id: bulky.id } });
    await reading.connected;
    await eventually(async () => (await metric(server, 'inkwell_sse_subscriptions')) === 2, 'both subscribed');

    // Each reaction is an event of about 50 KB, until the socket buffers (a few MB) and the
    // stream's own bound are full.
    let sent = 0;
    while ((await metric(server, 'inkwell_sse_slow_consumers_closed_total')) === 0 && sent < 2_000) {
      await server.inkwell.services.reactions.add({ kind: 'user', id: editor.user.id, role: 'editor', sessionId: null }, bulky.id, `type-${sent}`);
      sent++;
    }
    await eventually(async () => (await metric(server, 'inkwell_sse_slow_consumers_closed_total')) === 1, 'the stalled stream cut');
    // Reading again, the client finds its connection closed after what had reached it.
    stalled.resume();
    await closed;
    await eventually(async () => (await metric(server, 'inkwell_sse_subscriptions')) === 1, 'its subscription released');
    // The reading client received every event and is still subscribed.
    await waitFor(() => reading.results.length === sent, 30_000, 'every event on the reading stream');
    expect(reading.error).toBeUndefined();
    expect(reading.completed).toBe(false);
    reading.stop();
  }, 120_000);
});
