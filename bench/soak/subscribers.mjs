/**
 * The soak's WebSocket subscribers, in their own process (forked by run.mjs, driven over
 * IPC): plain `ws` sockets speaking graphql-transport-ws (as bench/fanout/loadgen.mjs,
 * so thousands of them cost this process little), each with one subscription, healthy
 * clients that read everything. Counts events, their publish→receipt latency, and every
 * fault: socket errors, closes we did not ask for (1013, "stopped reading", apart),
 * protocol errors and completes, error results.
 *
 *   {cmd: 'connect', url, plan: [{ kind: 'reaction' | 'user', postId?, token? }]}
 *   {cmd: 'pending'}   → which subscriptions have not had an event yet (the start barrier)
 *   {cmd: 'sample'}    → counters since the last sample, then resets them
 *   {cmd: 'close'}     → closes every socket (1000) and exits
 */
import WebSocket from 'ws';

const QUERIES = {
  reaction: 'subscription Reacted($id: ID!) { postReactionAdded(postId: $id) { id type createdAt user { id name } } }',
  user: 'subscription Joined { userCreated { id name createdAt } }',
};
/** Events the orchestrator causes to prove every subscription live: not soak traffic. */
const isBarrier = (kind, data) => (kind === 'reaction' ? data.postReactionAdded?.type?.startsWith('barrier') : data.userCreated?.name?.startsWith('Soak barrier'));
const BATCH = 100;

const subscribers = [];
let closing = false;
let interval = freshCounters();

function freshCounters() {
  return { events: { reaction: 0, user: 0 }, barrier: 0, latencies: [], errors: 0, closes: {}, firstProblem: undefined };
}

function problem(text) {
  interval.errors++;
  interval.firstProblem ??= text;
}

function onMessage(sub, raw) {
  let message;
  try {
    message = JSON.parse(String(raw));
  } catch {
    return problem(`not JSON: ${String(raw).slice(0, 200)}`);
  }
  if (message.type === 'ping') return sub.socket.send('{"type":"pong"}');
  if (message.type === 'pong') return;
  if (message.type !== 'next') return problem(`${sub.kind} subscription: ${message.type} ${JSON.stringify(message.payload ?? '').slice(0, 200)}`);
  const { data, errors } = message.payload ?? {};
  if (errors || !data) return problem(`${sub.kind} event with errors: ${JSON.stringify(errors ?? message.payload).slice(0, 200)}`);
  sub.received++;
  if (isBarrier(sub.kind, data)) {
    interval.barrier++;
    return;
  }
  interval.events[sub.kind]++;
  const createdAt = sub.kind === 'reaction' ? data.postReactionAdded.createdAt : data.userCreated.createdAt;
  interval.latencies.push(Date.now() - Date.parse(createdAt));
}

function openOne(url, entry) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
    const sub = { ...entry, socket, received: 0, acked: false };
    socket.once('error', reject);
    socket.once('close', (code) => reject(new Error(`closed ${code} before connection_ack`)));
    socket.once('open', () => {
      const payload = entry.token ? { authorization: `Bearer ${entry.token}` } : {};
      socket.send(JSON.stringify({ type: 'connection_init', payload }));
    });
    socket.once('message', (raw) => {
      const ack = JSON.parse(String(raw));
      if (ack.type !== 'connection_ack') return reject(new Error(`expected connection_ack, got ${String(raw).slice(0, 200)}`));
      socket.off('error', reject);
      socket.on('error', (error) => problem(`socket error: ${error.message}`));
      socket.on('message', (data) => onMessage(sub, data));
      socket.on('close', (code, reason) => {
        if (closing) return;
        interval.closes[code] = (interval.closes[code] ?? 0) + 1;
        problem(`socket closed ${code} ${String(reason)}`);
      });
      const variables = entry.kind === 'reaction' ? { id: entry.postId } : undefined;
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: QUERIES[entry.kind], variables } }));
      resolve(sub);
    });
  });
}

async function connect({ url, plan }) {
  const started = Date.now();
  for (let i = 0; i < plan.length; i += BATCH) {
    subscribers.push(...(await Promise.all(plan.slice(i, i + BATCH).map((entry) => openOne(url, entry)))));
  }
  return { connected: subscribers.length, ms: Date.now() - started };
}

/** The post ids (and `user`) with at least one subscriber that has had no event yet. */
function pending() {
  const posts = new Set();
  let user = false;
  for (const sub of subscribers) {
    if (sub.received > 0) continue;
    if (sub.kind === 'user') user = true;
    else posts.add(sub.postId);
  }
  return { posts: [...posts], user };
}

function sample() {
  const { latencies, ...rest } = interval;
  interval = freshCounters();
  const sorted = Float64Array.from(latencies).sort();
  const pick = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : undefined);
  const open = subscribers.filter((s) => s.socket.readyState === WebSocket.OPEN).length;
  return { ...rest, latency: { p50: pick(0.5), p99: pick(0.99), max: pick(1) }, open };
}

async function close() {
  closing = true;
  await Promise.all(
    subscribers.map(
      ({ socket }) =>
        new Promise((resolve) => {
          if (socket.readyState === WebSocket.CLOSED) return resolve();
          socket.once('close', resolve);
          socket.close(1000);
          setTimeout(() => {
            socket.terminate();
            resolve();
          }, 3_000).unref();
        }),
    ),
  );
}

process.once('disconnect', () => process.exit(0));
process.on('message', async (message) => {
  try {
    if (message.cmd === 'connect') process.send({ cmd: 'connect', ...(await connect(message)) });
    else if (message.cmd === 'pending') process.send({ cmd: 'pending', ...pending() });
    else if (message.cmd === 'sample') process.send({ cmd: 'sample', ...sample() });
    else if (message.cmd === 'close') {
      await close();
      process.send({ cmd: 'close' }, () => process.exit(0));
    }
  } catch (error) {
    process.send({ cmd: message.cmd, error: String(error?.stack ?? error) });
  }
});
process.send({ cmd: 'ready' });
