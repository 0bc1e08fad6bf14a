import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'graphql-ws';
import { startServer, wsUrl, type TestServer, withoutCost } from '../../helpers/server.js';
import { RawSocket, account, collect, fixtures, subscribersReady, waitFor, wsClient, type Account } from './helpers.js';

/*
 * Signed-in subscribers, with real access tokens from `POST /api/auth/login`, sent in
 * `connection_init` (`{authorization: "Bearer …"}`) or as the `auth-token` cookie.
 */

let server: TestServer;
let make: ReturnType<typeof fixtures>;
const clients: Client[] = [];
let admin: Account;
let alice: Account;
let bob: Account;
let editor: Account;

beforeAll(async () => {
  server = await startServer();
  make = fixtures(server);
  admin = await account(server, 'admin', 'Admin');
  alice = await account(server, 'user', 'Alice');
  bob = await account(server, 'user', 'Bob');
  editor = await account(server, 'editor', 'Editor');
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  await waitFor(() => server.inkwell.realtime.stats().connections === 0, 5_000, 'sockets closed');
  expect(server.inkwell.backends.pubsub.listenerCount()).toBe(0);
});
afterAll(async () => {
  await server.close();
});

/** The `sid` claim of an access token: the session it belongs to. */
function sessionOf(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).sid;
}

function as(who?: Account | string): Client {
  const token = typeof who === 'string' ? who : who?.token;
  const c = wsClient(wsUrl(server), token === undefined ? undefined : { authorization: `Bearer ${token}` });
  clients.push(c);
  return c;
}

describe('per-subscriber field rules', () => {
  it('userCreated: email only for admins and the user themself, null for others', async () => {
    const query = 'subscription { userCreated { name email } }';
    const views = {
      anonymous: collect(as(), { query }),
      admin: collect(as(admin), { query }),
      alice: collect(as(alice), { query }),
    };
    await subscribersReady(server.inkwell.realtime, 3);
    const carol = await make.user('user', 'Carol');
    await waitFor(() => Object.values(views).every((v) => v.results.length === 1));
    const emailOf = (v: { results: any[] }) => v.results[0].data.userCreated.email;
    expect(emailOf(views.admin)).toBe(carol.email);
    expect(emailOf(views.anonymous)).toBeNull();
    expect(emailOf(views.alice)).toBeNull();
  });

  it('reactions show the reacting user’s email to that user and admins only', async () => {
    const post = await make.post(editor.user);
    const query = 'subscription($id: ID!) { postReactionAdded(postId: $id) { user { email } } }';
    const variables = { id: post.id };
    const views = {
      bob: collect(as(bob), { query, variables }),
      admin: collect(as(admin), { query, variables }),
      alice: collect(as(alice), { query, variables }),
    };
    await subscribersReady(server.inkwell.realtime, 3);
    // Over HTTP with bob's token: the reaction is stored, then published.
    const added = await server.gql('mutation($id: ID!) { addReaction(postId: $id, type: "like") { id } }', variables, {
      headers: { authorization: `Bearer ${bob.token}` },
    });
    expect(added.body.errors).toBeUndefined();
    await waitFor(() => Object.values(views).every((v) => v.results.length === 1));
    expect(views.bob.results[0]!.data).toEqual({ postReactionAdded: { user: { email: bob.user.email } } });
    expect(views.admin.results[0]!.data).toEqual({ postReactionAdded: { user: { email: bob.user.email } } });
    expect(views.alice.results[0]!.data).toEqual({ postReactionAdded: { user: { email: null } } });
  });

  it('reactions on a draft reach its author and editors only', async () => {
    const draft = await make.post(alice.user, { published: false });
    const query = 'subscription($id: ID!) { postReactionAdded(postId: $id) { type post { id } } }';
    const variables = { id: draft.id };
    const views = {
      author: collect(as(alice), { query, variables }),
      editor: collect(as(editor), { query, variables }),
      other: collect(as(bob), { query, variables }),
      anonymous: collect(as(), { query, variables }),
    };
    await subscribersReady(server.inkwell.realtime, 4);
    await make.react(alice.user, draft, 'like');
    await waitFor(() => views.author.results.length === 1 && views.editor.results.length === 1);
    await new Promise((r) => setTimeout(r, 100));
    expect(views.author.results[0]!.data).toEqual({ postReactionAdded: { type: 'like', post: { id: draft.id } } });
    expect(views.other.results).toEqual([]);
    expect(views.anonymous.results).toEqual([]);
  });
});

describe('where the credentials come from', () => {
  const query = 'subscription { userCreated { email } }';

  /** 'visible' when the socket's caller may see a new user's email. */
  async function emailSeenWith(options: { params?: Record<string, unknown>; headers?: Record<string, string> }): Promise<string | null> {
    const socket = await RawSocket.open(wsUrl(server), 'graphql-transport-ws', { headers: options.headers });
    try {
      await socket.init(options.params);
      socket.subscribe('1', query);
      await subscribersReady(server.inkwell.realtime, 1);
      const user = await make.user();
      const next = await socket.next((m) => m.type === 'next');
      return next.payload.data.userCreated.email === user.email ? 'visible' : next.payload.data.userCreated.email;
    } finally {
      socket.close();
      await waitFor(() => server.inkwell.realtime.stats().connections === 0);
    }
  }

  it('reads the auth-token cookie of the upgrade request', async () => {
    expect(await emailSeenWith({ headers: { cookie: `other=1; ${admin.cookie}` } })).toBe('visible');
  });

  it('ignores the cookie when the page is of another origin (cross-site WebSocket hijacking)', async () => {
    expect(await emailSeenWith({ headers: { cookie: admin.cookie, origin: 'https://evil.example' } })).toBeNull();
    const host = new URL(server.url).host;
    expect(await emailSeenWith({ headers: { cookie: admin.cookie, origin: `http://${host}` } })).toBe('visible');
  });

  it('prefers connection_init’s authorization', async () => {
    expect(await emailSeenWith({ params: { authorization: `Bearer ${admin.token}` }, headers: { cookie: alice.cookie } })).toBe('visible');
  });

  /** Opens a socket and sends connection_init; resolves with how the server closed it. */
  async function closedWith(options: { params?: Record<string, unknown>; headers?: Record<string, string> }) {
    const socket = await RawSocket.open(wsUrl(server), 'graphql-transport-ws', { headers: options.headers });
    socket.send({ type: 'connection_init', payload: options.params });
    const closed = await socket.closed;
    expect(socket.messages.filter((m) => m.type === 'connection_ack')).toEqual([]);
    return closed.code;
  }

  it('refuses a present but invalid credential at connection_init with 4403 (malformed, forged, of a revoked session)', async () => {
    expect(await closedWith({ params: { authorization: admin.token } })).toBe(4403); // no "Bearer "
    expect(await closedWith({ params: { authorization: 'Bearer not.a.token' } })).toBe(4403);
    expect(await closedWith({ params: { authorization: 42 } })).toBe(4403);
    expect(await closedWith({ headers: { cookie: 'auth-token=garbage' } })).toBe(4403);
    // A malformed authorization decides alone, even beside a valid cookie.
    expect(await closedWith({ params: { authorization: 'Basic abc' }, headers: { cookie: admin.cookie } })).toBe(4403);
    const revoked = await account(server, 'user');
    await server.inkwell.auth.sessions.revoke(sessionOf(revoked.token));
    expect(await closedWith({ params: { authorization: `Bearer ${revoked.token}` } })).toBe(4403);
  });

  it('closes an open connection with 4403 at its next operation once its session is revoked', async () => {
    const victim = await account(server, 'user');
    const socket = await RawSocket.open(wsUrl(server));
    await socket.init({ authorization: `Bearer ${victim.token}` });
    socket.subscribe('before', '{ me { id } }');
    expect(withoutCost((await socket.next((m) => m.id === 'before')).payload)).toEqual({ data: { me: { id: victim.user.id } } });
    await server.inkwell.auth.sessions.revoke(sessionOf(victim.token));
    socket.subscribe('after', '{ me { id } }');
    expect((await socket.closed).code).toBe(4403);
    expect(socket.messages.filter((m) => m.id === 'after' && m.type === 'next')).toEqual([]);
  });

  it('re-reads the caller for every operation: a changed role counts from the next subscribe', async () => {
    const temp = await account(server, 'admin');
    const c = as(temp);
    const first = collect(c, { query });
    await subscribersReady(server.inkwell.realtime, 1);
    await server.inkwell.services.users.setRole(temp.user.email!, 'user');
    const second = collect(c, { query });
    await subscribersReady(server.inkwell.realtime, 2);
    const user = await make.user();
    await waitFor(() => first.results.length === 1 && second.results.length === 1);
    expect(first.results[0]!.data).toEqual({ userCreated: { email: user.email } });
    expect(second.results[0]!.data).toEqual({ userCreated: { email: null } });
  });
});

describe('rate limit', () => {
  it('queries and mutations over the socket share the HTTP /graphql limit; subscriptions do not count', async () => {
    const limited = await startServer({ RATE_LIMIT_MAX: '4' });
    try {
      const reader = await account(limited);
      const headers = { authorization: `Bearer ${reader.token}` };
      expect((await limited.gql('{ __typename }', {}, { headers })).status).toBe(200); // 1
      expect((await limited.gql('{ __typename }', {}, { headers })).status).toBe(200); // 2
      const socket = await RawSocket.open(wsUrl(limited));
      await socket.init({ authorization: `Bearer ${reader.token}` });
      socket.subscribe('s', 'subscription { userCreated { id } }'); // not counted
      await subscribersReady(limited.inkwell.realtime, 1);
      for (const id of ['q1', 'q2', 'q3']) {
        socket.subscribe(id, '{ __typename }'); // 3, 4, 5
        await socket.next((m) => m.id === id && (m.type === 'complete' || m.type === 'error'));
      }
      expect(socket.messages.filter((m) => m.type === 'next').map((m) => m.id)).toEqual(['q1', 'q2']);
      expect(socket.messages.find((m) => m.type === 'error')).toEqual({
        id: 'q3',
        type: 'error',
        payload: [{ message: 'Too many requests', extensions: { code: 'RATE_LIMITED' } }],
      });
      expect((await limited.gql('{ __typename }', {}, { headers })).status).toBe(429);
      // The subscription carries on.
      await limited.inkwell.services.users.insertAccount({ name: 'Later', email: 'later@example.test' });
      await socket.next((m) => m.id === 's' && m.type === 'next');
      socket.close();
    } finally {
      await limited.close();
    }
  });
});

