import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawPost } from '../helpers/raw-http.js';
import { startServer, type TestServer } from '../helpers/server.js';
import { fixtures } from '../graphql/ws/helpers.js';

/**
 * Slow readers (docs/limits.md, "Slow readers"): a response whose client accepts no bytes
 * for HTTP_SEND_TIMEOUT_MS (2 s here instead of 30 s) is cut, and what was buffered for
 * it freed with the connection; a client that reads slowly but keeps reading is not cut,
 * however long the whole response takes.
 */
// The reader below and the server share this process's loop: on a loaded machine a turn
// can come a second late (1 s here once cut a steady reader), so the limit is 20 of its 100 ms steps.
const TIMEOUT_MS = 2_000;
/** 100 posts of 50,000 characters, four times over: about 20 MB, far more than loopback's socket buffers hold. */
const BIG = `{ ${['a', 'b', 'c', 'd'].map((alias) => `${alias}: posts(limit: 100) { content }`).join(' ')} }`;
let server: TestServer;
let port: number;
let fullLength: number;

beforeAll(async () => {
  server = await startServer({ HTTP_SEND_TIMEOUT_MS: String(TIMEOUT_MS), RESPONSE_CACHE_MB: '0' });
  port = Number(new URL(server.url).port);
  const make = fixtures(server);
  const author = await make.user();
  for (let i = 0; i < 100; i++) await make.post(author, { content: `${i}`.padEnd(50_000, 'x') });
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: BIG }),
  });
  fullLength = (await response.arrayBuffer()).byteLength;
  expect(response.status).toBe(200);
  expect(fullLength).toBeGreaterThan(20_000_000);
}, 60_000);

afterAll(async () => {
  await server?.close();
});

/** The server's open connections (node:http counts them itself). */
function serverConnections(): Promise<number> {
  return new Promise((resolve, reject) => server.inkwell.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))));
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A client that sends the large query, then reads only when told to. */
async function requestBig(): Promise<{ socket: Socket; received: () => number; ended: Promise<void> }> {
  const socket = connect({ port, host: '127.0.0.1' });
  await once(socket, 'connect');
  let received = 0;
  socket.on('data', (chunk: Buffer) => (received += chunk.length));
  socket.on('error', () => {});
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.pause();
  socket.write(rawPost(JSON.stringify({ query: BIG }), { connection: 'close' }));
  return { socket, received: () => received, ended };
}

describe('HTTP_SEND_TIMEOUT_MS', () => {
  it('a client that never reads its large response is cut: the server closes the connection and frees it', async () => {
    const before = await serverConnections();
    const client = await requestBig();
    const sentAt = Date.now();
    await until(async () => (await serverConnections()) > before, 10_000, 'the connection to open');
    // Nothing is read: the server must give up on its own (without the bound it holds the
    // connection, and ~16 MB of unsent response, for as long as the client stays).
    await until(async () => (await serverConnections()) === before, 20_000, 'the server to close the connection');
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(TIMEOUT_MS);
    // What the kernel had already taken still arrives, then the end: the response was cut.
    client.socket.resume();
    await client.ended;
    expect(client.received()).toBeLessThan(fullLength);
    expect(server.inkwell.app.server.listening).toBe(true);
  }, 45_000);

  it('a client that reads slowly but steadily gets the whole response, though it takes several times the limit', async () => {
    const client = await requestBig();
    const started = Date.now();
    // 256 KB every 100 ms: never a second without progress, about 8 s for the whole response.
    let allowance = 0;
    client.socket.on('data', (chunk: Buffer) => {
      allowance -= chunk.length;
      if (allowance <= 0) client.socket.pause();
    });
    const reader = setInterval(() => {
      allowance = 256 * 1024;
      client.socket.resume();
    }, 100);
    try {
      await client.ended;
    } finally {
      clearInterval(reader);
    }
    // Headers and the body in full (Connection: close ends it after the response).
    expect(client.received()).toBeGreaterThan(fullLength);
    expect(Date.now() - started).toBeGreaterThan(3 * TIMEOUT_MS);
  }, 60_000);
});
