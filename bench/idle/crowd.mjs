/**
 * The idle crowd, in its own process (forked by run.mjs, driven over IPC):
 *
 *   {cmd: 'open', kind: 'http', url, count}          `count` keep-alive HTTP connections, each
 *                                                    after one GET /healthz, then left idle
 *   {cmd: 'open', kind: 'ws', url, count, postIds}   `count` WebSockets (graphql-transport-ws),
 *                                                    each acknowledged and subscribed to
 *                                                    postReactionAdded of one of `postIds`, then idle
 *   {cmd: 'status'}                                  how many are still open
 *   {cmd: 'close'}                                   closes everything and exits
 *
 * HTTP through node:http, one keep-alive Agent per connection (its free-socket pool holds
 * the idle connection, and no request reuses another's); WebSockets
 * as plain `ws` sockets speaking the protocol (with thousands of sockets the graphql-ws
 * client's own work would dominate). Connections open in batches, so the listen backlog
 * never overflows.
 */
import { Agent, get } from 'node:http';
import WebSocket from 'ws';

const BATCH = 250;
const SUBSCRIPTION = 'subscription ($id: ID!) { postReactionAdded(postId: $id) { id type } }';

const agents = [];
const httpSockets = new Set();
const webSockets = new Set();

function openHttp(url) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  agents.push(agent);
  return new Promise((resolve, reject) => {
    const request = get(`${url}/healthz`, { agent }, (response) => {
      response.resume();
      response.once('end', () => resolve());
    });
    request.once('socket', (socket) => {
      if (httpSockets.has(socket)) return;
      httpSockets.add(socket);
      socket.once('close', () => httpSockets.delete(socket));
    });
    request.once('error', reject);
  });
}

function openWs(url, postId) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false });
    socket.once('error', reject);
    socket.once('open', () => socket.send('{"type":"connection_init"}'));
    socket.once('message', () => {
      socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: SUBSCRIPTION, variables: { id: postId } } }));
      webSockets.add(socket);
      socket.once('close', () => webSockets.delete(socket));
      socket.on('error', () => {});
      resolve();
    });
  });
}

async function open({ kind, url, count, postIds = [] }) {
  const started = Date.now();
  if (kind === 'http') {
    for (let done = 0; done < count; done += BATCH) {
      const batch = Math.min(BATCH, count - done);
      await Promise.all(Array.from({ length: batch }, () => openHttp(url)));
    }
  } else {
    for (let done = 0; done < count; done += BATCH) {
      const batch = Math.min(BATCH, count - done);
      await Promise.all(Array.from({ length: batch }, (_, i) => openWs(url, postIds[(done + i) % postIds.length])));
    }
  }
  return { open: kind === 'http' ? httpSockets.size : webSockets.size, ms: Date.now() - started };
}

process.on('message', async (message) => {
  try {
    if (message.cmd === 'open') process.send({ cmd: 'opened', ...(await open(message)) });
    else if (message.cmd === 'status') process.send({ cmd: 'status', http: httpSockets.size, ws: webSockets.size });
    else if (message.cmd === 'close') {
      for (const socket of webSockets) socket.terminate();
      for (const agent of agents) agent.destroy();
      process.exit(0);
    }
  } catch (error) {
    process.send({ cmd: 'error', message: String(error?.stack ?? error) });
  }
});
process.send({ cmd: 'ready' });
