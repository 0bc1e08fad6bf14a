import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache, gql, split } from '@apollo/client';
import { CombinedGraphQLErrors, ServerError } from '@apollo/client/errors';
import { SetContextLink } from '@apollo/client/link/context';
import { ErrorLink } from '@apollo/client/link/error';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { isSubscriptionOperation } from '@apollo/client/utilities';
import { createClient, type Client as WsClient } from 'graphql-ws';
import { catchError, from, switchMap, throwError } from 'rxjs';
import WebSocket from 'ws';
import { startServer, wsUrl, type TestServer } from '../../helpers/server.js';
import { fixtures, waitFor } from '../../graphql/ws/helpers.js';
import { forged, recordRequests, refreshTokensOf, sessionIdOf, signedIn, type Session } from './session.js';

/*
 * Apollo Client 4 recovering from a refused access token, as README "Expired and revoked
 * tokens in clients" shows it: an ErrorLink refreshes once and retries the operation; the
 * WebSocket refreshes in `connectionParams` after a 4403 close. A forged signature stands
 * for an expired token (both are refused alike, and the refresh token stays good); a
 * revoked session kills the refresh token too, so there the error must surface cleanly.
 */

let server: TestServer;
let requests: ReturnType<typeof recordRequests>;
const stops: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  server = await startServer();
  requests = recordRequests(server);
});
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});
afterAll(async () => {
  await server.close();
});

/** The README's client, with the session's token and refresh; `accept` to see the plain-JSON 401. */
function apolloClient(session: Session, options: { accept?: string } = {}) {
  const isRefused = (error: unknown) =>
    (ServerError.is(error) && error.statusCode === 401) ||
    (CombinedGraphQLErrors.is(error) && error.errors.some((e) => e.extensions?.code === 'UNAUTHENTICATED'));

  // A refused token: refresh once, then send the operation again (the bearer link adds the new token).
  const retryAfterRefresh = new ErrorLink(({ error, operation, forward }) => {
    if (!isRefused(error) || operation.getContext().retried) return;
    operation.setContext({ retried: true });
    return from(session.refresh()).pipe(
      catchError(() => throwError(() => error)), // the session is over: surface the 401 itself
      switchMap(() => forward(operation)),
    );
  });
  const bearer = new SetContextLink(({ headers }) => ({ headers: { ...headers, authorization: `Bearer ${session.accessToken}` } }));

  let tokenRefused = false; // the server closed the socket with 4403
  const wsClient = createClient({
    url: wsUrl(server),
    webSocketImpl: WebSocket, // Node 20; browsers have WebSocket
    connectionParams: async () => {
      if (tokenRefused) {
        tokenRefused = false;
        await session.refresh();
      }
      return { authorization: `Bearer ${session.accessToken}` };
    },
    on: { closed: (event) => void (tokenRefused = (event as { code?: number }).code === 4403) },
  });

  const client = new ApolloClient({
    cache: new InMemoryCache(),
    link: split(
      ({ query }) => isSubscriptionOperation(query),
      new GraphQLWsLink(wsClient),
      ApolloLink.from([
        retryAfterRefresh,
        bearer,
        new HttpLink({ uri: `${server.url}/graphql`, ...(options.accept ? { headers: { accept: options.accept } } : {}) }),
      ]),
    ),
  });
  stops.push(() => client.stop(), () => wsClient.dispose());
  return { client, wsClient };
}

const ME = gql`query Me { me { id name } }`;

/** Signs in, then spoils the access token in a way a refresh repairs. */
async function withRefusedToken(name?: string): Promise<Session> {
  const session = await signedIn(server, name);
  session.accessToken = forged(session.accessToken);
  requests.clear();
  return session;
}

describe('Apollo Client 4 over HTTP: ErrorLink refreshes once and retries', () => {
  it('a refused token (CombinedGraphQLErrors UNAUTHENTICATED): one refresh, one retry, the right answer', async () => {
    const session = await withRefusedToken('Apollo Reader');
    const refused = session.accessToken;
    const { client } = apolloClient(session);

    const result = await client.query({ query: ME });

    expect(result.data).toEqual({ me: { __typename: 'User', id: session.userId, name: 'Apollo Reader' } });
    expect(result.error).toBeUndefined();
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
    expect(session.accessToken).not.toBe(refused);
    expect(await refreshTokensOf(server, session)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a plain-JSON client (ServerError 401) recovers the same way', async () => {
    const session = await withRefusedToken();
    const { client } = apolloClient(session, { accept: 'application/json' });

    const result = await client.query({ query: ME });

    expect(result.data).toMatchObject({ me: { id: session.userId } });
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
    expect(await refreshTokensOf(server, session)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a mutation refused before it ran is retried and takes effect once', async () => {
    const make = fixtures(server);
    const post = await make.post(await make.user('editor'));
    const session = await withRefusedToken();
    const { client } = apolloClient(session);

    const result = await client.mutate({
      mutation: gql`mutation React($id: ID!) { addReaction(postId: $id, type: "like") { type user { id } post { id likes } } }`,
      variables: { id: post.id },
    });

    expect(result.data).toEqual({
      addReaction: {
        __typename: 'Reaction',
        type: 'like',
        user: { __typename: 'User', id: session.userId },
        post: { __typename: 'Post', id: post.id, likes: 1 },
      },
    });
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
  });

  it('a revoked session: the refresh is refused too, and the UNAUTHENTICATED error surfaces after one try', async () => {
    const session = await signedIn(server);
    await server.inkwell.auth.sessions.revoke(sessionIdOf(session.accessToken));
    requests.clear();
    const { client } = apolloClient(session);

    const error = await client.query({ query: ME }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(CombinedGraphQLErrors.is(error)).toBe(true);
    expect((error as CombinedGraphQLErrors).errors).toEqual([
      { message: 'Invalid or expired credentials', extensions: { code: 'UNAUTHENTICATED' } },
    ]);
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 401']);
    expect(await refreshTokensOf(server, session)).toEqual({ issued: 1, rotated: 0 });
  });
});

describe('Apollo Client 4 over WebSocket: a 4403 close makes connectionParams refresh', () => {
  it('the socket refused at connection_init reconnects with a fresh token and the subscription gets its event', async () => {
    const make = fixtures(server);
    const post = await make.post(await make.user('editor'));
    const reactor = await make.user();
    const session = await withRefusedToken();
    const { client, wsClient } = apolloClient(session);
    const closes: number[] = [];
    wsClient.on('closed', (event) => closes.push((event as { code: number }).code));

    const received: unknown[] = [];
    const errors: unknown[] = [];
    const subscription = client
      .subscribe({
        query: gql`subscription Reactions($id: ID!) { postReactionAdded(postId: $id) { type user { id } } }`,
        variables: { id: post.id },
      })
      .subscribe({ next: (result) => (result.error ? errors.push(result.error) : received.push(result.data)), error: (e) => errors.push(e) });
    stops.push(() => subscription.unsubscribe());
    // graphql-ws waits 1.3–4 s before its first reconnect.
    await waitFor(() => server.inkwell.realtime.stats().subscribers === 1, 15_000, 'the subscription after the reconnect');
    await make.react(reactor, post);
    await waitFor(() => received.length === 1, 5_000, 'the event');

    expect(received).toEqual([{ postReactionAdded: { __typename: 'Reaction', type: 'like', user: { __typename: 'User', id: reactor.id } } }]);
    expect(errors).toEqual([]);
    expect(closes).toEqual([4403]);
    expect(requests.list()).toEqual(['POST /api/auth/refresh 200']);
    expect(await refreshTokensOf(server, session)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a revoked session: one refresh, refused, and the subscription ends with an error instead of reconnecting', async () => {
    const post = await fixtures(server).post(await fixtures(server).user('editor'));
    const session = await signedIn(server);
    await server.inkwell.auth.sessions.revoke(sessionIdOf(session.accessToken));
    requests.clear();
    const { client, wsClient } = apolloClient(session);
    const closes: number[] = [];
    wsClient.on('closed', (event) => closes.push((event as { code: number }).code));

    const outcomes: unknown[] = [];
    const subscription = client
      .subscribe({ query: gql`subscription Reactions($id: ID!) { postReactionAdded(postId: $id) { type } }`, variables: { id: post.id } })
      .subscribe({ next: (result) => outcomes.push(result), error: (e) => outcomes.push(e), complete: () => outcomes.push('complete') });
    stops.push(() => subscription.unsubscribe());
    await waitFor(() => outcomes.includes('complete') || outcomes.some((o) => o instanceof Error), 15_000, 'the subscription to end');

    // The refused refresh's error, through Apollo's subscription result; no reconnect after it.
    expect(outcomes).toEqual([{ data: undefined, error: new Error('session ended') }, 'complete']);
    // graphql-ws closes the socket with 4005 when connectionParams throws; that close is not retried.
    await waitFor(() => closes.length === 2 && server.inkwell.realtime.stats().connections === 0, 5_000, 'the socket closed');
    expect(closes).toEqual([4403, 4005]);
    expect(requests.list()).toEqual(['POST /api/auth/refresh 401']);
  });
});
