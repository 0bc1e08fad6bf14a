import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql, type Client } from '@urql/core';
import { startServer, type TestServer } from '../../helpers/server.js';
import { fixtures } from '../../graphql/ws/helpers.js';
import { scratchDir } from '../ops/helpers.js';
import { forged, recordRequests, refreshTokensOf, sessionIdOf, signedIn } from './session.js';

/*
 * urql recovering from a refused access token: the README's `refresh-urql` snippet
 * (README "Expired and revoked tokens in clients"), read from README.md and run after its
 * `session` snippet, as written but for the address. `authExchange` adds the bearer
 * token, sees the 401 (or the UNAUTHENTICATED code), refreshes once and retries once.
 */

let server: TestServer;
let requests: ReturnType<typeof recordRequests>;
let dir: string;

beforeAll(async () => {
  server = await startServer();
  requests = recordRequests(server);
  dir = scratchDir('readme-urql');
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The README's urql client, signed in as a fresh account. */
const readmeUrql = (name?: string) => signedIn<{ client: Client }>(server, dir, { after: ['refresh-urql'], exports: 'export { client };', ...(name ? { name } : {}) });

const ME = gql`query Me { me { id name } }`;

describe('urql with authExchange', () => {
  it('a refused token: one refresh, one retry, the right answer', async () => {
    const { app, userId } = await readmeUrql('Urql Reader');
    const refused = (app.state.accessToken = forged(app.state.accessToken));
    requests.clear();

    const result = await app.client.query(ME, {}).toPromise();

    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({ me: { __typename: 'User', id: userId, name: 'Urql Reader' } });
    // urql sends short queries as GET.
    expect(requests.list()).toEqual(['GET /graphql 401', 'POST /api/auth/refresh 200', 'GET /graphql 200']);
    expect(app.state.accessToken).not.toBe(refused);
    expect(await refreshTokensOf(server, app.state.accessToken)).toEqual({ issued: 2, rotated: 1 });
  });

  it('a mutation refused before it ran is retried and takes effect once', async () => {
    const make = fixtures(server);
    const post = await make.post(await make.user('editor'));
    const { app } = await readmeUrql();
    app.state.accessToken = forged(app.state.accessToken);
    requests.clear();

    const result = await app.client
      .mutation(gql`mutation React($id: ID!) { addReaction(postId: $id, type: "like") { type post { id likes } } }`, { id: post.id })
      .toPromise();

    expect(result.error).toBeUndefined();
    expect(result.data).toEqual({
      addReaction: { __typename: 'Reaction', type: 'like', post: { __typename: 'Post', id: post.id, likes: 1 } },
    });
    expect(requests.list()).toEqual(['POST /graphql 401', 'POST /api/auth/refresh 200', 'POST /graphql 200']);
  });

  it('a revoked session: one refresh, refused, one retry, then a clean UNAUTHENTICATED error', async () => {
    const { app } = await readmeUrql();
    await server.inkwell.auth.sessions.revoke(sessionIdOf(app.state.accessToken));
    requests.clear();

    const result = await app.client.query(ME, {}).toPromise();

    expect(result.data).toBeUndefined();
    expect(result.error?.networkError).toBeUndefined();
    expect(result.error?.response?.status).toBe(401);
    expect(result.error?.graphQLErrors.map((e) => [e.message, e.extensions])).toEqual([
      ['Invalid or expired credentials', { code: 'UNAUTHENTICATED' }],
    ]);
    expect(requests.list()).toEqual(['GET /graphql 401', 'POST /api/auth/refresh 401', 'GET /graphql 401']);
    expect(await refreshTokensOf(server, app.state.accessToken)).toEqual({ issued: 1, rotated: 0 });
  });
});
