import { createClient, type Client } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startLoad, type Outcome } from '../../helpers/load.js';
import { processBackend, type ProcessBackend } from '../../helpers/process-backend.js';
import { RawClient, headerOf, rawPost } from '../../helpers/raw-http.js';
import { eventually, startInstance, type Instance } from '../scale/instances.js';

/**
 * SIGTERM to a service process under load (docs/operations.md, "Graceful shutdown"):
 * 20 HTTP clients on keep-alive connections reading and writing, and 50 WebSocket
 * subscribers receiving events. Every request sent before the signal is answered in
 * full, none is reset, requests on open keep-alive connections are still answered
 * (with `Connection: close`), new connections are refused, subscribers get 1001, and
 * the process exits 0 (it exits 1 if its 10 s grace period runs out). On both databases.
 */
let backend: ProcessBackend;
let adminToken: string;
const started: Instance[] = [];

// One public origin for all instances: access tokens carry it as `iss`.
const env = () => ({ ...backend.env, SEED_DEMO_DATA: 'auto', PUBLIC_URL: 'http://127.0.0.1:8080' });

beforeAll(async () => {
  backend = await processBackend();
  // Migrates and seeds once; the instances of the tests below start on that database.
  const first = await startInstance('seed', env());
  const login = await first.post('/api/auth/login', { email: 'admin@inkwell.test', password: 'inkwell-demo' });
  expect(login.status).toBe(200);
  adminToken = login.body.accessToken as string;
  expect(await first.stop()).toBe(0);
});

afterAll(async () => {
  for (const instance of started) if (instance.child.exitCode === null) instance.child.kill('SIGKILL');
  await backend?.drop();
});

async function start(name: string): Promise<Instance> {
  const instance = await startInstance(name, env());
  started.push(instance);
  return instance;
}

const exited = (instance: Instance) =>
  instance.child.exitCode !== null
    ? Promise.resolve(instance.child.exitCode)
    : new Promise<number | null>((resolve) => instance.child.once('exit', (code) => resolve(code)));

/** A load mixing reads, writes and writes that emit an event to the subscribers. */
function operation(client: number, n: number) {
  const headers = { authorization: `Bearer ${adminToken}`, 'x-forwarded-for': `10.9.${client}.1` };
  switch (n % 3) {
    case 0:
      return { query: '{ books(limit: 5) { id title } posts(limit: 3) { id title author { name } } }', headers };
    case 1:
      return { query: 'mutation ($t: String!) { addBook(title: $t, author: "Drain") { id } }', variables: { t: `drain ${client}.${n}` }, headers };
    default:
      return {
        query: 'mutation ($e: String!) { createUser(name: "Drain", email: $e) { id } }',
        variables: { e: `drain-${Date.now()}-${client}-${n}@example.test` },
        headers,
      };
  }
}

it('drains under load: every request sent before SIGTERM answered, none reset, WebSockets 1001, exit 0', async () => {
  const instance = await start('under-load');
  const wsUrl = `${instance.url.replace(/^http/, 'ws')}/graphql`;

  const closeCodes: number[] = [];
  const events = new Array<number>(50).fill(0);
  const subscribers: Client[] = [];
  for (let i = 0; i < 50; i++) {
    const client = createClient({
      url: wsUrl,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      lazy: false,
      // The close at shutdown is expected; graphql-ws would print it.
      onNonLazyError: () => {},
      on: { closed: (event) => closeCodes.push((event as { code: number }).code) },
    });
    client.subscribe({ query: 'subscription { userCreated { id } }' }, { next: () => events[i]!++, error: () => {}, complete: () => {} });
    subscribers.push(client);
  }

  const load = startLoad({ clients: 20, target: () => instance.url, operation });
  await eventually(() => events.every((n) => n > 0) && load.outcomes.length >= 150, 30_000, 'load and events on every subscriber').catch((error) => {
    console.log(events, load.outcomes.length, load.outcomes.slice(-3), closeCodes);
    throw error;
  });

  const signalledAt = Date.now();
  instance.child.kill('SIGTERM');
  const code = await exited(instance);
  const exitMs = Date.now() - signalledAt;
  await load.stop();
  await Promise.all(subscribers.map((s) => s.dispose()));

  const outcomes = load.outcomes;
  const sentBefore = outcomes.filter((o) => o.sentAt !== undefined && o.sentAt < signalledAt);
  const inFlight = sentBefore.filter((o) => o.endedAt >= signalledAt);
  const after = outcomes.filter((o) => o.startedAt >= signalledAt);
  const answeredAfter = after.filter((o) => o.status !== undefined);
  const failed = (o: Outcome) => o.error !== undefined || o.status !== 200 || o.body?.errors !== undefined;
  if (process.env.TEST_LOG_LEVEL) {
    console.log({ total: outcomes.length, sentBefore: sentBefore.length, inFlight: inFlight.length, after: after.length, answeredAfter: answeredAfter.length, exitMs });
  }

  expect(code).toBe(0);
  // Requests were really in flight at the signal, and all of them got their answer.
  expect(inFlight.length).toBeGreaterThan(0);
  expect(sentBefore.filter(failed)).toEqual([]);
  // After the signal: answered in full on a connection that was open (then closed), or
  // refused at connect (nothing was sent). Never reset, never cut off, never 503.
  expect(after.filter((o) => o.error !== undefined && o.error !== 'ECONNREFUSED')).toEqual([]);
  expect(answeredAfter.filter(failed)).toEqual([]);
  // Once the signal has surely been handled, every answer closes its connection.
  for (const o of answeredAfter.filter((o) => o.startedAt > signalledAt + 500)) expect(o.headers?.connection).toBe('close');
  // Every subscriber was closed with 1001 (going away).
  expect(closeCodes).toHaveLength(50);
  expect(new Set(closeCodes)).toEqual(new Set([1001]));
  // Acknowledged writes are there.
  const acknowledged = outcomes.filter((o) => o.body?.data?.addBook?.id).map((o) => o.body.data.addBook.id as string);
  const stored = new Set((await backend.rows<{ id: string }>("select id from books where author = 'Drain'")).map((r) => r.id));
  expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
}, 90_000);

it('keep-alive connections: a request sent just before or after SIGTERM is answered, idle ones close cleanly, new ones are refused', async () => {
  const instance = await start('keep-alive');
  const read = rawPost(JSON.stringify({ query: '{ books(limit: 1) { id } }' }));
  const resets: string[] = [];
  const open = async () => {
    const client = await RawClient.connect(instance.port);
    client.socket.on('error', (error: NodeJS.ErrnoException) => resets.push(error.code ?? error.message));
    client.write(read);
    const first = await client.response();
    expect(first.status).toBe(200);
    expect(headerOf(first, 'connection')).toBe('keep-alive');
    return client;
  };
  // Four idle keep-alive connections.
  const [sentBefore, sentAfter, idle, busy] = await Promise.all([open(), open(), open(), open()]);

  // A slow request in flight at the signal (its answer must say Connection: close).
  busy.write(rawPost(JSON.stringify({ query: 'mutation { a: addBook(title: "busy", author: "Drain") { id } }' }), { authorization: `Bearer ${adminToken}` }));
  // A request written to an idle keep-alive connection, then at once the signal.
  sentBefore.write(read);
  instance.child.kill('SIGTERM');

  // Answered in full: with `Connection: close` when the signal was handled first, else
  // as usual (then the connection is idle, and closed after the linger, below).
  const answered = await sentBefore.response();
  expect(answered.status).toBe(200);
  expect(JSON.parse(answered.text).data.books).toHaveLength(1);

  const inFlight = await busy.response();
  expect(inFlight.status).toBe(200);
  expect(headerOf(inFlight, 'connection')).toBe('close');
  expect(await busy.waitClosed(2_000)).toBe(true);

  // New connections are refused once the signal has been handled.
  await eventually(
    () =>
      new Promise<boolean>((resolve) => {
        RawClient.connect(instance.port).then(
          (client) => {
            client.socket.destroy();
            resolve(false);
          },
          (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'),
        );
      }),
    2_000,
    'new connections to be refused',
  );

  // A request on a keep-alive connection a moment after the signal is still answered.
  await new Promise((r) => setTimeout(r, 200));
  sentAfter.write(read);
  const late = await sentAfter.response();
  expect(late.status).toBe(200);
  expect(headerOf(late, 'connection')).toBe('close');

  // A connection that stays idle is closed after the linger, without a reset.
  expect(await idle.waitClosed(5_000)).toBe(true);
  expect(await sentBefore.waitClosed(1_000)).toBe(true);
  expect(await exited(instance)).toBe(0);
  expect(resets).toEqual([]);
});
