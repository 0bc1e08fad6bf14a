import { afterAll, beforeAll, expect, it } from 'vitest';
import { processBackend, type ProcessBackend } from '../../helpers/process-backend.js';
import { startServer, withoutCost } from '../../helpers/server.js';
import { startInstance } from '../../system/scale/instances.js';
import { collect, once, sseClient } from './helpers.js';

/*
 * Shutdown (docs/operations.md, "Graceful shutdown"): open event streams get `complete`
 * after the events already sent, then their responses end, and the process exits 0.
 */

let backend: ProcessBackend;
beforeAll(async () => {
  backend = await processBackend();
});
afterAll(async () => {
  await backend?.drop();
});

it('closing the service completes every open stream, which ends cleanly for the client', async () => {
  const server = await startServer();
  const client = sseClient(server);
  const first = collect(client, { query: 'subscription { userCreated { id } }' });
  const second = collect(client, { query: 'subscription ($id: ID!) { postPublished(postId: $id) { id } }', variables: { id: 'any' } });
  await Promise.all([first.connected, second.connected]);
  await server.inkwell.services.users.insertAccount({ name: 'Before the drain', email: 'before-drain@example.test', role: 'user' });
  // The event goes out before the stream completes.
  await new Promise<void>((resolve) => {
    const check = () => (first.results.length === 1 ? resolve() : setTimeout(check, 10));
    check();
  });

  await server.close();
  await Promise.all([first.done, second.done]);
  for (const stream of [first, second]) {
    expect(stream.error).toBeUndefined();
    expect(stream.completed).toBe(true);
  }
  expect(first.results.map(withoutCost)).toEqual([{ data: { userCreated: { id: expect.any(String) } } }]);
  expect(second.results).toEqual([]);
}, 60_000);

it('SIGTERM: the subscriber gets `complete`, and the process drains and exits 0', async () => {
  const instance = await startInstance('sse-drain', { ...backend.env });
  try {
    const client = sseClient(instance);
    const ready = await once(client, { query: '{ me { id } }' });
    expect(ready.completed).toBe(true);
    const subscription = collect(client, { query: 'subscription { userCreated { id } }' });
    await subscription.connected;

    // graphql-sse's client, done with a query, leaves a connection that has sent nothing:
    // the drain closes it (src/http/drain.ts) instead of waiting for it past the grace period.
    expect(await instance.stop()).toBe(0);
    await subscription.done;
    expect(subscription.error).toBeUndefined();
    expect(subscription.completed).toBe(true);
  } finally {
    if (instance.child.exitCode === null) instance.child.kill('SIGKILL');
  }
}, 60_000);
