import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApolloClient, HttpLink, InMemoryCache, gql, split } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { isSubscriptionOperation } from '@apollo/client/utilities';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { startServer, wsUrl, type TestServer } from '../../helpers/server.js';
import { account, fixtures, subscribersReady, waitFor, type Account } from './helpers.js';

// Node 20 has no global WebSocket; browsers and Node 22 do.
(globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;

let server: TestServer;
let client: ApolloClient;
let wsClient: ReturnType<typeof createClient>;
let reader: Account;

beforeAll(async () => {
  server = await startServer();
  reader = await account(server, 'user', 'Apollo Reader');
  const authorization = `Bearer ${reader.token}`;
  wsClient = createClient({ url: wsUrl(server), retryAttempts: 0, connectionParams: { authorization } });
  client = new ApolloClient({
    link: split(
      ({ query }) => isSubscriptionOperation(query),
      new GraphQLWsLink(wsClient),
      new HttpLink({ uri: `${server.url}/graphql`, headers: { authorization } }),
    ),
    cache: new InMemoryCache(),
  });
});
afterAll(async () => {
  client.stop();
  await wsClient.dispose();
  await server.close();
});

describe('Apollo Client 4 (GraphQLWsLink for subscriptions, HttpLink for the rest)', () => {
  it('subscribes over WebSocket, queries and mutates over HTTP, and sees the event in its cache', async () => {
    const make = fixtures(server);
    const author = await make.user('editor', 'Apollo Author');
    const post = await make.post(author);

    const query = await client.query({
      query: gql`query Post($id: ID!) { post(id: $id) { id title likes } }`,
      variables: { id: post.id },
    });
    expect(query.data).toEqual({ post: { __typename: 'Post', id: post.id, title: post.title, likes: 0 } });

    const received: unknown[] = [];
    const subscription = client
      .subscribe({
        query: gql`
          subscription Reactions($id: ID!) {
            postReactionAdded(postId: $id) { id type user { name } post { id likes } }
          }
        `,
        variables: { id: post.id },
      })
      .subscribe({ next: (result) => received.push(result.data) });
    await subscribersReady(server.inkwell.realtime, 1);

    const mutation = await client.mutate({
      mutation: gql`mutation React($id: ID!) { addReaction(postId: $id, type: "like") { id } }`,
      variables: { id: post.id },
    });
    const reaction = (mutation.data as { addReaction: { id: string } }).addReaction;
    await waitFor(() => received.length === 1);
    expect(received[0]).toEqual({
      postReactionAdded: {
        __typename: 'Reaction',
        id: reaction.id,
        type: 'like',
        user: { __typename: 'User', name: reader.user.name },
        post: { __typename: 'Post', id: post.id, likes: 1 },
      },
    });
    // The normalised cache merged the subscription's Post into the query's.
    expect((client.cache.extract() as Record<string, unknown>)[`Post:${post.id}`]).toMatchObject({ likes: 1, title: post.title });

    subscription.unsubscribe();
    await subscribersReady(server.inkwell.realtime, 0);
    await waitFor(() => server.inkwell.backends.pubsub.listenerCount() === 0);
  });
});
