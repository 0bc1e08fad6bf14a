import { rmSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gql, type ApolloClient } from '@apollo/client';
import { CombinedGraphQLErrors } from '@apollo/client/errors';
import type { Client as WsClient } from 'graphql-ws';
import { startServer, type TestServer } from '../../helpers/server.js';
import { fixtures, waitFor } from '../../graphql/ws/helpers.js';
import { scratchDir } from '../ops/helpers.js';
import { forged, recordRequests, refreshTokensOf, sessionIdOf, signedIn } from './session.js';

/*
 * Apollo Client 4 recovering from a refused access token: the README's `refresh-apollo`
 * snippet (README "Expired and revoked tokens in clients"), read from README.md and run
 * after its `session` snippet, as written but for the address. An ErrorLink refreshes
 * once and retries the operation; the WebSocket refreshes in `connectionParams` after a
 * 4403 close. A forged signature stands for an expired token (both are refused alike,
 * and the refresh token stays good); a revoked session kills the refresh token too, so
 * there the error must surface cleanly.
 */

let server: TestServer;
let requests: ReturnType<typeof recordRequests>;
let dir: string;
const stops: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  server = await startServer();
  requests = recordRequests(server);
  dir = scratchDir('readme-apollo');
});
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The README's Apollo Client, signed in as a fresh account. */
async function readmeApollo(name?: string) {
  const signed = await signedIn<{ client: ApolloClient; wsClient: WsClient }>(server, dir, {
    after: ['refresh-apollo'],
    exports: 'export { client, wsClient };',
    ...(name ? { name } : {}),
  });
  const { client, wsClient } = signed.app;
  stops.push(() => client.stop(), () => wsClient.dispose());
  return signed;
}

const ME = gql`query Me { me { id name } }`;

/** Signs in, then spoils the access token in a way a refresh repairs. */
async function withRefusedToken(name?: string) {
  const signed = await readmeApollo(name);
  signed.app.state.accessToken = forged(signed.app.state.accessToken);
  requests.clear();
  return signed;
}

describe('Apollo Client 4 over HTTP: ErrorLink refreshes once and retries', () => {
  it('a refused token (CombinedGraphQLErrors UNAUTHENTICATED): one refresh, one retry, the right answer', async () => {
    const { app, userId } = await withRefusedToken('Apollo Reader');
    const refused = app.state.accessToken;

    const result = await app.client.query({ query: ME });

    expect(result.data).toEqual({ me: { __typename: 'User', id: userId, name: 'Apollo Reader' } });
    expect(result.error).toBeUndefined();
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
    expect(app.state.accessToken).not.toBe(refused);
    expect(await refreshTokensOf(server, app.state.accessToken)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a plain-JSON client (ServerError 401) recovers the same way', async () => {
    const { app, userId } = await withRefusedToken();

    const accepts: (string | undefined)[] = [];
    const seeAccept = (request: IncomingMessage) => void (request.url?.startsWith('/graphql') && accepts.push(request.headers.accept));
    server.inkwell.app.server.on('request', seeAccept);
    stops.push(() => void server.inkwell.app.server.off('request', seeAccept));

    // The operation's own headers reach HttpLink through the README's bearer link.
    const result = await app.client.query({ query: ME, context: { headers: { accept: 'application/json' } } });

    expect(accepts).toEqual(['application/json', 'application/json']);
    expect(result.data).toMatchObject({ me: { id: userId } });
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
    expect(await refreshTokensOf(server, app.state.accessToken)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a mutation refused before it ran is retried and takes effect once', async () => {
    const make = fixtures(server);
    const post = await make.post(await make.user('editor'));
    const { app, userId } = await withRefusedToken();

    const result = await app.client.mutate({
      mutation: gql`mutation React($id: ID!) { addReaction(postId: $id, type: "like") { type user { id } post { id likes } } }`,
      variables: { id: post.id },
    });

    expect(result.data).toEqual({
      addReaction: {
        __typename: 'Reaction',
        type: 'like',
        user: { __typename: 'User', id: userId },
        post: { __typename: 'Post', id: post.id, likes: 1 },
      },
    });
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
  });

  it('a revoked session: the refresh is refused too, and the UNAUTHENTICATED error surfaces after one try', async () => {
    const { app } = await readmeApollo();
    await server.inkwell.auth.sessions.revoke(sessionIdOf(app.state.accessToken));
    requests.clear();

    const error = await app.client.query({ query: ME }).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(CombinedGraphQLErrors.is(error)).toBe(true);
    expect((error as CombinedGraphQLErrors).errors).toEqual([
      { message: 'Invalid or expired credentials', extensions: { code: 'UNAUTHENTICATED' } },
    ]);
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 401']);
    expect(await refreshTokensOf(server, app.state.accessToken)).toEqual({ issued: 1, rotated: 0 });
  });
});

describe('Apollo Client 4 over WebSocket: a 4403 close makes connectionParams refresh', () => {
  it('the socket refused at connection_init reconnects with a fresh token and the subscription gets its event', async () => {
    const make = fixtures(server);
    const post = await make.post(await make.user('editor'));
    const reactor = await make.user();
    const { app } = await withRefusedToken();
    const { client, wsClient } = app;
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
    expect(await refreshTokensOf(server, app.state.accessToken)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a revoked session: one refresh, refused, and the subscription ends with an error instead of reconnecting', async () => {
    const post = await fixtures(server).post(await fixtures(server).user('editor'));
    const { app } = await readmeApollo();
    await server.inkwell.auth.sessions.revoke(sessionIdOf(app.state.accessToken));
    requests.clear();
    const { client, wsClient } = app;
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
