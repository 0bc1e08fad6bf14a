import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, cacheExchange, fetchExchange, gql, type CombinedError } from '@urql/core';
import { authExchange } from '@urql/exchange-auth';
import { startServer, type TestServer } from '../../helpers/server.js';
import { fixtures } from '../../graphql/ws/helpers.js';
import { forged, recordRequests, refreshTokensOf, sessionIdOf, signedIn, type Session } from './session.js';

/*
 * urql recovering from a refused access token, as README "Expired and revoked tokens in
 * clients" shows it: `authExchange` adds the bearer token, sees the 401 (or the
 * UNAUTHENTICATED code), refreshes once and retries the operation once.
 */

let server: TestServer;
let requests: ReturnType<typeof recordRequests>;

beforeAll(async () => {
  server = await startServer();
  requests = recordRequests(server);
});
afterAll(async () => {
  await server.close();
});

/** The README's client, with the session's token and refresh. */
function urqlClient(session: Session): Client {
  return new Client({
    url: `${server.url}/graphql`,
    exchanges: [
      cacheExchange,
      authExchange(async (utils) => ({
        addAuthToOperation: (operation) => utils.appendHeaders(operation, { authorization: `Bearer ${session.accessToken}` }),
        didAuthError: (error: CombinedError) =>
          error.response?.status === 401 || error.graphQLErrors.some((e) => e.extensions?.code === 'UNAUTHENTICATED'),
        // A refused refresh ends the session: the retry then fails with UNAUTHENTICATED, and that is final.
        refreshAuth: () => session.refresh().then(() => {}, () => {}),
      })),
      fetchExchange,
    ],
  });
}

const ME = gql`query Me { me { id name } }`;

describe('urql with authExchange', () => {
  it('a refused token: one refresh, one retry, the right answer', async () => {
    const session = await signedIn(server, 'Urql Reader');
    const refused = (session.accessToken = forged(session.accessToken));
    requests.clear();

    const result = await urqlClient(session).query(ME, {}).toPromise();

    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({ me: { __typename: 'User', id: session.userId, name: 'Urql Reader' } });
    // urql sends short queries as GET.
    expect(requests.list()).toEqual(['GET /graphql 401', 'POST /api/auth/refresh 200', 'GET /graphql 200']);
    expect(session.accessToken).not.toBe(refused);
    expect(await refreshTokensOf(server, session)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a mutation refused before it ran is retried and takes effect once', async () => {
    const make = fixtures(server);
    const post = await make.post(await make.user('editor'));
    const session = await signedIn(server);
    session.accessToken = forged(session.accessToken);
    requests.clear();

    const result = await urqlClient(session)
      .mutation(gql`mutation React($id: ID!) { addReaction(postId: $id, type: "like") { type post { id likes } } }`, { id: post.id })
      .toPromise();

    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({
      addReaction: { __typename: 'Reaction', type: 'like', post: { __typename: 'Post', id: post.id, likes: 1 } },
    });
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
  });

  it('a revoked session: one refresh, refused, one retry, then a clean UNAUTHENTICATED error', async () => {
    const session = await signedIn(server);
    await server.inkwell.auth.sessions.revoke(sessionIdOf(session.accessToken));
    requests.clear();

    const result = await urqlClient(session).query(ME, {}).toPromise();

    expect(result.data).toBeUndefined();
    expect(result.error?.networkError).toBeUndefined();
    expect(result.error?.response?.status).toBe(401);
    expect(result.error?.graphQLErrors.map((e) => [e.message, e.extensions])).toEqual([
      ['Invalid or expired credentials', { code: 'UNAUTHENTICATED' }],
    ]);
    expect(requests.list()).toEqual(['GET /graphql 401', 'POST /api/auth/refresh 401', 'GET /graphql 401']);
    expect(await refreshTokensOf(server, session)).toEqual({ issued: 1, rotated: 0 });
  });
});
