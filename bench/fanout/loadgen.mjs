/**
 * The fan-out load generator, in its own process (forked by run.mjs, driven over IPC):
 *
 *   {cmd: 'connect', url, postId, count}        opens `count` WebSockets (graphql-transport-ws),
 *                                               each subscribed to postReactionAdded(postId)
 *   {cmd: 'react', graphqlUrl, token, postId,   adds reactions over HTTP (the addReaction
 *    reactions, intervalMs, prefix}             mutation with a bearer token), one after
 *                                               another, and times every delivery
 *   {cmd: 'close'}                              closes the sockets and exits
 *
 * Plain `ws` sockets speaking the protocol, not the graphql-ws client: with 5,000
 * sockets in one process the client's own work would dominate the measurement. A
 * delivery's latency is receipt time minus the reaction's `createdAt`, which the
 * server stamps right before it stores and publishes the reaction (same machine clock).
 */
import WebSocket from 'ws';
import { SUBSCRIPTION, addReaction } from './api.mjs';

const CREATED_AT = Buffer.from('"createdAt":"');
const BATCH = 250;

const sockets = [];
let latencies = [];
let received = 0;
let lastReceipt = 0;

function onMessage(data) {
  const at = data.indexOf(CREATED_AT);
  if (at < 0) return;
  const start = at + CREATED_AT.length;
  const now = Date.now();
  latencies.push(now - Date.parse(data.toString('latin1', start, start + 24)));
  received++;
  lastReceipt = now;
}

function openOne(url, postId) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
    socket.once('error', reject);
    socket.once('open', () => socket.send('{"type":"connection_init"}'));
    socket.once('message', () => {
      // The first message is the ack; subscribe, then only events follow.
      socket.on('message', onMessage);
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { id: postId } } }));
      resolve(socket);
    });
  });
}

async function connect({ url, postId, count }) {
  const started = Date.now();
  while (sockets.length < count) {
    const batch = Math.min(BATCH, count - sockets.length);
    sockets.push(...(await Promise.all(Array.from({ length: batch }, () => openOne(url, postId)))));
  }
  return { connected: sockets.length, ms: Date.now() - started };
}

async function react({ graphqlUrl, token, postId, reactions, prefix = 'fanout', intervalMs = 0, timeoutMs = 120_000 }) {
  latencies = [];
  received = 0;
  const expected = sockets.length * reactions;
  const started = Date.now();
  for (let i = 0; i < reactions; i++) {
    await addReaction({ graphqlUrl, token, postId, type: `${prefix}${i}` });
    if (intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const published = Date.now();
  while (received < expected && Date.now() - started < timeoutMs) await new Promise((resolve) => setTimeout(resolve, 20));
  const sorted = Float64Array.from(latencies).sort();
  const pick = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] : NaN);
  const seconds = (lastReceipt - started) / 1000;
  return {
    expected,
    received,
    p50: pick(0.5),
    p99: pick(0.99),
    max: sorted.length ? sorted[sorted.length - 1] : NaN,
    messagesPerSecond: seconds > 0 ? received / seconds : NaN,
    publishSeconds: (published - started) / 1000,
    seconds,
  };
}

process.on('message', async (message) => {
  try {
    if (message.cmd === 'connect') process.send({ cmd: 'connect', ...(await connect(message)) });
    else if (message.cmd === 'react') process.send({ cmd: 'react', ...(await react(message)) });
    else if (message.cmd === 'close') {
      for (const socket of sockets) socket.terminate();
      process.exit(0);
    }
  } catch (error) {
    process.send({ cmd: message.cmd, error: String(error?.stack ?? error) });
  }
});
process.send({ cmd: 'ready' });
