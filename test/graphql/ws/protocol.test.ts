import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { channels } from '../../../src/realtime/pubsub.js';
import { startServer, wsUrl, type TestServer, withoutCost } from '../../helpers/server.js';
import { RawSocket, fixtures, subscribersReady, waitFor } from './helpers.js';

let server: TestServer;
const sockets: RawSocket[] = [];

beforeAll(async () => {
  server = await startServer();
});
afterEach(async () => {
  for (const s of sockets.splice(0)) s.socket.terminate();
  await waitFor(() => server.inkwell.realtime.stats().connections === 0, 8_000, 'sockets closed');
  expect(server.inkwell.backends.pubsub.listenerCount()).toBe(0);
});
afterAll(async () => {
  await server.close();
});

async function open(protocols?: string | string[], options?: WebSocket.ClientOptions): Promise<RawSocket> {
  const socket = await RawSocket.open(wsUrl(server), protocols, options);
  sockets.push(socket);
  return socket;
}

const USERS = 'subscription { userCreated { id } }';

describe('graphql-transport-ws protocol errors', () => {
  it('closes 4408 when connection_init does not arrive within 3 s', async () => {
    const s = await open();
    const started = Date.now();
    expect(await s.closed).toMatchObject({ code: 4408 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    expect(Date.now() - started).toBeLessThan(4_500);
  });

  it('closes 4401 on subscribe before the ack', async () => {
    const s = await open();
    s.subscribe('1', USERS);
    expect(await s.closed).toMatchObject({ code: 4401 });
  });

  it('closes 4409 when a subscription id is already in use', async () => {
    const s = await open();
    await s.init();
    s.subscribe('same', USERS);
    await subscribersReady(server.inkwell.realtime, 1);
    s.subscribe('same', USERS);
    expect(await s.closed).toMatchObject({ code: 4409 });
  });

  it('closes 4429 on a second connection_init', async () => {
    const s = await open();
    await s.init();
    s.send({ type: 'connection_init' });
    expect(await s.closed).toMatchObject({ code: 4429 });
  });

  it('closes 4400 on a malformed message', async () => {
    const s = await open();
    await s.init();
    s.send('{not json');
    expect(await s.closed).toMatchObject({ code: 4400 });
    const t = await open();
    await t.init();
    t.send({ type: 'subscribe', id: '1', payload: { query: 42 } });
    expect(await t.closed).toMatchObject({ code: 4400 });
  });

  it('refuses another subprotocol: none is selected, and a socket without it is closed 4406', async () => {
    const legacy = new WebSocket(wsUrl(server), 'graphql-ws');
    const failure = await new Promise<Error>((resolve) => legacy.once('error', resolve));
    expect(failure.message).toMatch(/no subprotocol/i);
    const none = await open([]);
    expect(await none.closed).toMatchObject({ code: 4406 });
  });

  it('answers 404 to an upgrade on another path', async () => {
    const other = new WebSocket(wsUrl(server).replace('/graphql', '/elsewhere'), 'graphql-transport-ws');
    const failure = await new Promise<Error>((resolve) => other.once('error', resolve));
    expect(failure.message).toMatch(/404/);
  });

  it('answers ping with pong', async () => {
    const s = await open();
    await s.init();
    s.send({ type: 'ping', payload: { n: 1 } });
    expect(await s.next((m) => m.type === 'pong')).toEqual({ type: 'pong', payload: { n: 1 } });
  });
});

describe('limits per connection', () => {
  it('closes 1009 on a message over 64 KB; 64 KB itself passes', async () => {
    const s = await open();
    await s.init();
    const query = `query { __typename }`;
    const fits = JSON.stringify({ id: 'ok', type: 'subscribe', payload: { query: query + ' '.repeat(64 * 1024) } });
    const padding = 64 * 1024 - fits.length;
    s.send(JSON.stringify({ id: 'ok', type: 'subscribe', payload: { query: query + ' '.repeat(64 * 1024 + padding) } }));
    expect(await s.next((m) => m.id === 'ok' && m.type === 'next')).toMatchObject({ payload: { data: { __typename: 'Query' } } });
    s.send('x'.repeat(64 * 1024 + 1));
    expect(await s.closed).toMatchObject({ code: 1009 });
  });

  it('allows 100 active subscriptions; the 101st gets TOO_MANY_SUBSCRIPTIONS and the others carry on', async () => {
    const s = await open();
    await s.init();
    for (let i = 1; i <= 101; i++) s.subscribe(String(i), USERS);
    const refused = await s.next((m) => m.type === 'error');
    expect(refused).toEqual({ id: '101', type: 'error', payload: [{ message: expect.any(String), extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' } }] });
    await subscribersReady(server.inkwell.realtime, 100);

    await fixtures(server).user();
    await waitFor(() => s.messages.filter((m) => m.type === 'next').length === 100);
    // Completing one frees a slot; a query is not a subscription and is not counted.
    s.send({ id: '1', type: 'complete' });
    await subscribersReady(server.inkwell.realtime, 99);
    s.subscribe('again', USERS);
    s.subscribe('query', '{ __typename }');
    await subscribersReady(server.inkwell.realtime, 100);
    expect(await s.next((m) => m.id === 'query' && m.type === 'next')).toMatchObject({ payload: { data: { __typename: 'Query' } } });
    expect(s.messages.filter((m) => m.type === 'error')).toHaveLength(1);
  });

  it('closes a subscriber that stops reading once 1 MiB is queued for it, and keeps serving the others', async () => {
    const make = fixtures(server);
    const author = await make.user('editor');
    const reader = await make.user();
    const post = await make.post(author, { content: 'x'.repeat(50_000) });
    // 30 aliases of a 50 KB field: about 1.5 MB per event.
    const fields = Array.from({ length: 30 }, (_, i) => `c${i}: content`).join(' ');
    const query = `subscription($id: ID!) { postReactionAdded(postId: $id) { post { ${fields} } } }`;
    const slow = await open();
    await slow.init();
    slow.subscribe('big', query, { id: post.id });
    const fast = await open();
    await fast.init();
    fast.subscribe('big', query, { id: post.id });
    await subscribersReady(server.inkwell.realtime, 2);
    (slow.socket as unknown as { _socket: { pause(): void } })._socket.pause();

    // Until the kernel's socket buffers are full and 1 MiB more waits in the server
    // (kernel buffers vary by machine: at most 40 events, 60 MB).
    let sent = 0;
    while (server.inkwell.realtime.stats().slowConsumersClosed === 0 && sent < 40) {
      await make.react(reader, post, `r${sent++}`);
      await waitFor(() => fast.messages.length >= sent + 1, 10_000, `event ${sent}`); // ack + events
    }
    // Past 1 MiB unsent the server stops writing to it and closes it (1013 queued
    // behind its unread data, then destroyed after the close timeout).
    expect(server.inkwell.realtime.stats().slowConsumersClosed).toBe(1);
    await waitFor(() => server.inkwell.realtime.stats().connections === 1, 10_000, 'slow socket closed');
    expect(fast.socket.readyState).toBe(WebSocket.OPEN);
    expect(fast.messages.filter((m) => m.type === 'next')).toHaveLength(sent);
  }, 30_000);
});

describe('shutdown', () => {
  it('closes open sockets with 1001 after what was already sent, and refuses new ones', async () => {
    const own = await startServer();
    try {
      const s = await RawSocket.open(wsUrl(own));
      await s.init();
      s.subscribe('1', USERS);
      await subscribersReady(own.inkwell.realtime, 1);
      await own.inkwell.backends.pubsub.publish(channels.userCreated(), {
        id: 'u1', name: 'Last', email: null, age: null, avatar: null, role: 'user', createdAt: new Date().toISOString(),
      });
      const closing = own.inkwell.close();
      expect(await s.closed).toMatchObject({ code: 1001 });
      expect(s.messages.map((m) => m.type)).toEqual(['connection_ack', 'next']);
      await closing;
      expect(own.inkwell.backends.pubsub.listenerCount()).toBe(0);
      await expect(RawSocket.open(wsUrl(own))).rejects.toThrow();
    } finally {
      await own.close().catch(() => {});
    }
  });
});

/**
 * What each kind of operation gets over the socket (docs/subscriptions.md): the same
 * request core as HTTP answers, and only the framing differs.
 */
describe('answers over the socket', () => {
  const forId = (s: RawSocket, id: string) => s.messages.filter((m) => m.id === id).map((m) => m.type);

  it('a query: one next with the answer as HTTP gives it, then complete', async () => {
    const s = await open();
    await s.init();
    s.subscribe('q', '{ __typename posts(limit: 1) { id } }');
    await s.next((m) => m.id === 'q' && m.type === 'complete');
    const http = await server.gql('{ __typename posts(limit: 1) { id } }');
    expect(withoutCost(s.messages.find((m) => m.id === 'q' && m.type === 'next').payload)).toEqual(withoutCost(http.body));
    expect(forId(s, 'q')).toEqual(['next', 'complete']);
  });

  it('a query whose variables do not match their types: an error message, as HTTP answers 400', async () => {
    const s = await open();
    await s.init();
    s.subscribe('v', 'query ($n: Int!) { posts(limit: $n) { id } }', { n: 'many' });
    const error = await s.next((m) => m.id === 'v' && m.type === 'error');
    expect(error.payload[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    expect(forId(s, 'v')).toEqual(['error']);
  });

  it('a subscription that cannot start: its result with formatted errors (code and argument), then complete', async () => {
    const s = await open();
    await s.init();
    s.subscribe('bad', 'subscription { postPublished(postId: "a\\u0000b") { id } }');
    const next = await s.next((m) => m.id === 'bad' && m.type === 'next');
    expect(next.payload.errors).toEqual([expect.objectContaining({ extensions: { code: 'BAD_USER_INPUT', argument: 'postId' } })]);
    await s.next((m) => m.id === 'bad' && m.type === 'complete');
  });
});
