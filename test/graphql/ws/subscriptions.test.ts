import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from 'graphql-ws';
import { channels } from '../../../src/realtime/pubsub.js';
import { startServer, wsUrl, type TestServer, withoutCost } from '../../helpers/server.js';
import { account, collect, fixtures, subscribersReady, waitFor, wsClient } from './helpers.js';

let server: TestServer;
let make: ReturnType<typeof fixtures>;
const clients: Client[] = [];

beforeAll(async () => {
  server = await startServer();
  make = fixtures(server);
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
  await waitFor(() => server.inkwell.realtime.stats().connections === 0, 5_000, 'sockets closed');
});
afterAll(async () => {
  await server.close();
});

function client(params?: Record<string, unknown>): Client {
  const c = wsClient(wsUrl(server), params);
  clients.push(c);
  return c;
}

const REACTIONS = /* GraphQL */ `
  subscription Reactions($postId: ID!) {
    postReactionAdded(postId: $postId) { id type user { name email } post { id title likes } }
  }
`;

describe('subscriptions end to end (graphql-ws client over ws)', () => {
  it('userCreated reaches every subscriber, with email hidden from an anonymous one', async () => {
    const c = client();
    const sub = collect(c, { query: 'subscription { userCreated { id name email role } }' });
    await subscribersReady(server.inkwell.realtime, 1);
    const user = await make.user('user', 'Newcomer');
    await waitFor(() => sub.results.length === 1);
    expect(withoutCost(sub.results[0])).toEqual({ data: { userCreated: { id: user.id, name: 'Newcomer', email: null, role: 'user' } } });
  });

  it('postPublished fires once when a draft is published', async () => {
    const author = await make.user('editor');
    const draft = await make.post(author, { published: false });
    const c = client();
    const sub = collect(c, { query: 'subscription($id: ID!) { postPublished(postId: $id) { id published author { name } } }', variables: { id: draft.id } });
    await subscribersReady(server.inkwell.realtime, 1);
    await make.publish(draft);
    await make.publish(draft); // publishing twice emits one event
    await waitFor(() => sub.results.length === 1);
    await new Promise((r) => setTimeout(r, 50));
    expect(sub.results.map(withoutCost)).toEqual([{ data: { postPublished: { id: draft.id, published: true, author: { name: author.name } } } }]);
  });

  it('postReactionAdded carries the stored reaction, resolved like a query', async () => {
    const author = await make.user('editor');
    const reader = await make.user('user', 'Reader');
    const post = await make.post(author);
    const sub = collect(client(), { query: REACTIONS, variables: { postId: post.id } });
    await subscribersReady(server.inkwell.realtime, 1);
    const reaction = await make.react(reader, post, 'like');
    await waitFor(() => sub.results.length === 1);
    expect(withoutCost(sub.results[0])).toEqual({
      data: {
        postReactionAdded: {
          id: reaction.id,
          type: 'like',
          user: { name: 'Reader', email: null },
          post: { id: post.id, title: post.title, likes: 1 },
        },
      },
    });
  });

  it('routes by post: a reaction on one post never reaches the subscriber of another', async () => {
    const author = await make.user('editor');
    const reader = await make.user();
    const [a, b] = [await make.post(author), await make.post(author)];
    const c = client();
    const onA = collect(c, { query: REACTIONS, variables: { postId: a.id } });
    const onB = collect(c, { query: REACTIONS, variables: { postId: b.id } });
    await subscribersReady(server.inkwell.realtime, 2);
    // One listener per post channel: the event for A is never offered to B's subscription.
    expect(server.inkwell.backends.pubsub.listenerCount()).toBe(2);
    await make.react(reader, a, 'like');
    await make.react(reader, a, 'love');
    await waitFor(() => onA.results.length === 2);
    await new Promise((r) => setTimeout(r, 100));
    expect(onB.results).toEqual([]);
    expect(onA.results.map((r) => r.data?.postReactionAdded.type)).toEqual(['like', 'love']);
  });

  it('many subscribers of one query share one listener and all receive each event', async () => {
    const author = await make.user('editor');
    const reader = await make.user();
    const post = await make.post(author);
    const subs = Array.from({ length: 5 }, () => collect(client(), { query: REACTIONS, variables: { postId: post.id } }));
    await subscribersReady(server.inkwell.realtime, 5);
    expect(server.inkwell.backends.pubsub.listenerCount()).toBe(1);
    await make.react(reader, post);
    await waitFor(() => subs.every((s) => s.results.length === 1));
    expect(new Set(subs.map((s) => JSON.stringify(withoutCost(s.results[0])))).size).toBe(1);
  });

  it('a reaction on a draft is not delivered to a subscriber who may not see the draft', async () => {
    const author = await make.user('user');
    const draft = await make.post(author, { published: false });
    const sub = collect(client(), { query: REACTIONS, variables: { postId: draft.id } });
    await subscribersReady(server.inkwell.realtime, 1);
    await make.react(author, draft); // the author may react to their own draft
    await new Promise((r) => setTimeout(r, 150));
    expect(sub.results).toEqual([]);
    await make.publish(draft);
    await make.react(author, draft, 'love');
    await waitFor(() => sub.results.length === 1);
    expect(sub.results[0]!.data?.postReactionAdded.type).toBe('love');
  });

  it('complete (unsubscribe) and disconnect release every pub/sub listener', async () => {
    const author = await make.user('editor');
    const [a, b] = [await make.post(author), await make.post(author)];
    const c1 = client();
    const s1 = collect(c1, { query: REACTIONS, variables: { postId: a.id } });
    const s2 = collect(c1, { query: REACTIONS, variables: { postId: b.id } });
    const s3 = collect(c1, { query: 'subscription { userCreated { id } }' });
    const c2 = client();
    collect(c2, { query: REACTIONS, variables: { postId: a.id } });
    collect(c2, { query: 'subscription { userCreated { name } }' });
    await subscribersReady(server.inkwell.realtime, 5);
    const pubsub = server.inkwell.backends.pubsub;
    expect(pubsub.listenerCount()).toBe(4);

    s1.stop(); // a's group still has c2's subscriber
    await subscribersReady(server.inkwell.realtime, 4);
    expect(pubsub.listenerCount()).toBe(4);
    s2.stop();
    s3.stop();
    await subscribersReady(server.inkwell.realtime, 2);
    expect(pubsub.listenerCount()).toBe(2);

    await c2.dispose(); // closes the socket without completing its subscriptions
    await waitFor(() => pubsub.listenerCount() === 0, 5_000, 'listeners released');
    expect(server.inkwell.realtime.stats()).toMatchObject({ groups: 0, subscribers: 0 });
  });

  it('a failing event stream ends every subscriber of the group with an error and releases the listener', async () => {
    const author = await make.user('editor');
    const post = await make.post(author);
    const c = client();
    const subs = [collect(c, { query: REACTIONS, variables: { postId: post.id } }), collect(c, { query: REACTIONS, variables: { postId: post.id } })];
    await subscribersReady(server.inkwell.realtime, 2);
    // The visibility check refuses this payload (a NUL in an id): the stream fails.
    await server.inkwell.backends.pubsub.publish(channels.postReactionAdded(post.id), { id: 'r', postId: 'bad\u0000id', userId: author.id, type: 'like', createdAt: '' });
    await waitFor(() => subs.every((sub) => sub.errors.length === 1));
    for (const sub of subs) expect(sub.errors[0]).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) })]);
    await waitFor(() => server.inkwell.backends.pubsub.listenerCount() === 0, 5_000, 'listener released');
    expect(server.inkwell.realtime.stats()).toMatchObject({ groups: 0, subscribers: 0 });
  });

  it('the API’s emitters: createUser, registration, publishPost (over HTTP with a real token)', async () => {
    const admin = await account(server, 'admin');
    const author = await make.user('editor');
    const draft = await make.post(author, { published: false });
    const c = client();
    const users = collect(c, { query: 'subscription { userCreated { name } }' });
    const published = collect(c, { query: 'subscription($id: ID!) { postPublished(postId: $id) { id published } }', variables: { id: draft.id } });
    await subscribersReady(server.inkwell.realtime, 2);
    const headers = { authorization: `Bearer ${admin.token}` };

    const created = await server.gql('mutation { createUser(name: "Made By Admin", email: "made@example.test") { id } }', {}, { headers });
    expect(created.body.errors).toBeUndefined();
    const registered = await fetch(`${server.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Self Registered', email: 'self@example.test', password: 'long-enough-password' }),
    });
    expect(registered.status).toBe(201);
    await waitFor(() => users.results.length === 2);
    expect(users.results.map((r) => r.data?.userCreated.name)).toEqual(['Made By Admin', 'Self Registered']);

    const publish = await server.gql('mutation($id: ID!) { publishPost(id: $id) { id } }', { id: draft.id }, { headers });
    expect(publish.body.errors).toBeUndefined();
    await waitFor(() => published.results.length === 1);
    expect(withoutCost(published.results[0])).toEqual({ data: { postPublished: { id: draft.id, published: true } } });
  });

  it('refuses invalid operations with the HTTP error format, before execution', async () => {
    const c = client();
    const run = (query: string, variables?: Record<string, unknown>) => {
      const sub = collect(c, { query, variables });
      return waitFor(() => sub.errors.length + sub.results.length > 0).then(() => sub);
    };
    const unknown = await run('subscription { userCreated { nope } }');
    expect(unknown.errors[0]).toEqual([expect.objectContaining({ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })]);
    const syntax = await run('subscription {');
    expect(syntax.errors[0]).toEqual([expect.objectContaining({ extensions: { code: 'GRAPHQL_PARSE_FAILED' } })]);
    const deep = await run('subscription { userCreated { posts { author { posts { author { posts { author { name } } } } } } } }');
    expect(deep.errors[0]).toEqual([expect.objectContaining({ extensions: { code: 'MAX_DEPTH' } })]);
    const costly = await run('subscription { userCreated { posts(limit: 100) { reactions(limit: 100) { id } } } }');
    expect(costly.errors[0]).toEqual([expect.objectContaining({ message: 'Query too complex', extensions: { code: 'MAX_COMPLEXITY' } })]);
    const badVariables = await run('subscription($id: ID!) { postPublished(postId: $id) { id } }', { id: { no: 1 } });
    expect(badVariables.errors[0]).toEqual([expect.objectContaining({ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } })]);
    expect(server.inkwell.backends.pubsub.listenerCount()).toBe(0);
  });

  it('runs queries and mutations over the socket with the same rules and error masking', async () => {
    const author = await make.user('editor', 'Query Author');
    const post = await make.post(author);
    const c = client();
    const query = collect(c, { query: 'query($id: ID!) { post(id: $id) { title author { name email } } }', variables: { id: post.id } });
    await waitFor(() => query.completed);
    expect(query.results.map(withoutCost)).toEqual([{ data: { post: { title: post.title, author: { name: 'Query Author', email: null } } } }]);

    const mutation = collect(c, { query: 'mutation($id: ID!) { addReaction(postId: $id, type: "like") { id } }', variables: { id: post.id } });
    await waitFor(() => mutation.completed);
    expect(mutation.results.map(withoutCost)).toEqual([
      { data: null, errors: [{ message: expect.any(String), locations: expect.any(Array), path: ['addReaction'], extensions: { code: 'UNAUTHENTICATED' } }] },
    ]);
  });
});

describe('in production', () => {
  it('refuses introspection and masks internal errors, as over HTTP', async () => {
    const prod = await startServer({ NODE_ENV: 'production', BCRYPT_COST: '10' });
    const c = wsClient(wsUrl(prod));
    try {
      const schema = collect(c, { query: '{ __schema { types { name } } }' });
      await waitFor(() => schema.errors.length === 1);
      const refused = schema.errors[0] as { extensions: { code: string } }[];
      expect(refused.length).toBeGreaterThan(0);
      expect(refused.map((e) => e.extensions.code)).toEqual(refused.map(() => 'GRAPHQL_VALIDATION_FAILED'));

      const sub = collect(c, { query: 'subscription { userCreated { id name } }' });
      await subscribersReady(prod.inkwell.realtime, 1);
      // A payload that breaks the schema (name is non-null): an internal fault, never shown.
      await prod.inkwell.backends.pubsub.publish(channels.userCreated(), { id: 'x', name: null });
      await waitFor(() => sub.results.length === 1);
      expect(withoutCost(sub.results[0])).toEqual({
        data: null,
        errors: [{ message: 'Internal server error', locations: expect.any(Array), path: ['userCreated', 'name'], extensions: { code: 'INTERNAL_ERROR' } }],
      });
    } finally {
      await c.dispose();
      await prod.close();
    }
  });
});
