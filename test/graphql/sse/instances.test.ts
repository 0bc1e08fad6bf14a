import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { channels } from '../../../src/realtime/pubsub.js';
import { withoutCost } from '../../helpers/server.js';
import { eventually, freshDatabase, randomIp, startInstance, type Instance } from '../../system/scale/instances.js';
import { collect, once, sseClient, waitFor } from './helpers.js';

/*
 * Two instances on one PostgreSQL and one Redis (docs/subscriptions.md, "Several
 * instances"): a stream open on instance A receives the event of a mutation sent to
 * instance B, through Redis. The postgres project only (vitest.config.ts, `scale`).
 */

let a: Instance;
let b: Instance;
let database: { url: string; drop(): Promise<void> };
let redis: Redis;
const prefix = `sse-${randomBytes(4).toString('hex')}:`;

beforeAll(async () => {
  database = await freshDatabase(inject('postgresUrl'));
  const env = {
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    REDIS_KEY_PREFIX: prefix,
    // One public origin for the whole service: tokens carry it as `iss`.
    PUBLIC_URL: 'http://127.0.0.1:8080',
    SEED_DEMO_DATA: 'auto',
  };
  // A first, alone: it migrates and seeds; B starts on the ready database.
  a = await startInstance('A', env);
  b = await startInstance('B', env);
  redis = new Redis(inject('redisUrl'));
}, 120_000);

afterAll(async () => {
  const codes = await Promise.all([a?.stop(), b?.stop()]);
  redis?.disconnect();
  await database?.drop();
  expect(codes).toEqual([0, 0]);
});

it('a subscription streaming from instance A receives the reaction added by a mutation on instance B', async () => {
  const login = await b.post('/api/auth/login', { email: 'editor@inkwell.test', password: 'inkwell-demo' });
  expect(login.status).toBe(200);
  const authorization = `Bearer ${login.body.accessToken as string}`;
  const created = await once(sseClient(b, { headers: { authorization, 'x-forwarded-for': randomIp() } }), {
    query: 'mutation { createPost(title: "Across instances", authorId: "' + (login.body.user.id as string) + '", published: true) { id } }',
  });
  expect(created.results[0]?.errors).toBeUndefined();
  const postId = (created.results[0]?.data as { createPost: { id: string } }).createPost.id;

  const stream = collect(sseClient(a, { headers: { 'x-forwarded-for': randomIp() } }), {
    query: 'subscription ($id: ID!) { postReactionAdded(postId: $id) { type user { name } post { id } } }',
    variables: { id: postId },
  });
  await stream.connected;
  // A has subscribed in Redis once the channel has a subscriber there (its local stream is live already).
  const channel = `${prefix}${channels.postReactionAdded(postId)}`;
  await eventually(async () => ((await redis.pubsub('NUMSUB', channel)) as [string, number])[1] === 1, 15_000, 'A to subscribe in Redis');

  const reacted = await once(sseClient(b, { headers: { authorization, 'x-forwarded-for': randomIp() } }), {
    query: 'mutation ($id: ID!) { addReaction(postId: $id, type: "across") { id } }',
    variables: { id: postId },
  });
  expect(reacted.results[0]?.errors).toBeUndefined();
  await waitFor(() => stream.results.length === 1 || stream.error !== undefined, 15_000, 'the event on A');
  expect(stream.error).toBeUndefined();
  expect(withoutCost(stream.results[0])).toEqual({
    data: { postReactionAdded: { type: 'across', user: { name: login.body.user.name }, post: { id: postId } } },
  });
  stream.stop();
}, 60_000);
