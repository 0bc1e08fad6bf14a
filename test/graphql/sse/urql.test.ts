import { Client, cacheExchange, fetchExchange, gql, subscriptionExchange, type OperationResult } from '@urql/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../helpers/server.js';
import { account, endpoint, post, sseClient, waitFor } from './helpers.js';

/*
 * urql with its subscriptions over graphql-sse (README, "GraphQL over Server-Sent
 * Events"): `subscriptionExchange` hands each subscription to graphql-sse's client;
 * queries and mutations keep going through `fetchExchange` as JSON.
 */

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server?.close();
});

function urqlClient(token: string): Client {
  const sse = sseClient(server, { headers: { authorization: `Bearer ${token}` } });
  return new Client({
    url: endpoint(server),
    fetchOptions: { headers: { authorization: `Bearer ${token}` } },
    exchanges: [
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription(operation) {
          return {
            subscribe: (sink) => ({ unsubscribe: sse.subscribe({ ...operation, query: operation.query ?? '' }, sink) }),
          };
        },
      }),
    ],
  });
}

it('a subscription through subscriptionExchange receives the reaction that a mutation (through fetchExchange) adds', async () => {
  const editor = await account(server, 'editor', 'Urql Editor');
  const reader = await account(server, 'user', 'Urql Reader');
  const watched = await post(server, editor.user);
  const client = urqlClient(reader.token);

  const results: OperationResult[] = [];
  const { unsubscribe } = client
    .subscription(gql`subscription Reactions($id: ID!) { postReactionAdded(postId: $id) { type user { name } } }`, { id: watched.id })
    .subscribe((result) => results.push(result));
  // The stream is live once the server has a subscriber for it: an event sent now arrives.
  await waitFor(() => server.inkwell.backends.pubsub.listenerCount() === 1, 15_000, 'the subscription live');

  const mutation = await client.mutation(gql`mutation React($id: ID!) { addReaction(postId: $id, type: "like") { type } }`, { id: watched.id }).toPromise();
  expect(mutation.error).toBeUndefined();

  await waitFor(() => results.length === 1, 15_000, 'the event through urql');
  expect(results[0]?.error).toBeUndefined();
  expect(results[0]?.data).toEqual({ postReactionAdded: { type: 'like', user: { name: 'Urql Reader' } } });
  expect(results[0]?.extensions?.['cost']).toEqual(expect.objectContaining({ requestedQueryCost: expect.any(Number) }));
  unsubscribe();
  await waitFor(() => server.inkwell.backends.pubsub.listenerCount() === 0, 15_000, 'the subscription released');
});

it('a subscription the server refuses reaches urql as a GraphQL error', async () => {
  const reader = await account(server, 'user', 'Urql Refused');
  const client = urqlClient(reader.token);
  const result = await client.subscription(gql`subscription { userCreated { nope } }`, {}).toPromise();
  expect(result.error?.graphQLErrors.map((e) => e.extensions?.['code'])).toEqual(['GRAPHQL_VALIDATION_FAILED']);
});
