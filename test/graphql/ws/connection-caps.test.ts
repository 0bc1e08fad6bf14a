import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startServer, wsUrl, type TestServer } from '../../helpers/server.js';
import { PROTOCOL, RawSocket, waitFor } from './helpers.js';

/**
 * WebSocket connection caps (docs/limits.md, "Connections"): at most
 * WS_MAX_CONNECTIONS_PER_CLIENT (default 100) open connections per client address, and
 * WS_MAX_CONNECTIONS per instance; beyond, the upgrade itself is answered 429 (the
 * client's share) or 503 (the instance is full) with Retry-After. Every address in
 * 127.0.0.0/8 is loopback, so one test is many clients (`localAddress`).
 */

interface Refusal {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

const opened: RawSocket[] = [];

/** An accepted connection, acknowledged (so the 3 s `connection_init` deadline does not close it). */
async function open(server: TestServer, options: WebSocket.ClientOptions = {}): Promise<RawSocket> {
  const socket = await RawSocket.open(wsUrl(server), PROTOCOL, options);
  opened.push(socket);
  await socket.init();
  return socket;
}

/** An upgrade the server must refuse: its status, headers and body. */
function refused(server: TestServer, options: WebSocket.ClientOptions = {}): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(wsUrl(server), PROTOCOL, options);
    socket.once('open', () => {
      socket.terminate();
      reject(new Error('the upgrade was accepted'));
    });
    socket.once('error', reject);
    socket.once('unexpected-response', (request, response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.once('end', () => {
        request.destroy();
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body });
      });
    });
  });
}

async function closeAll(server: TestServer): Promise<void> {
  const sockets = opened.splice(0);
  for (const socket of sockets) socket.close();
  await Promise.all(sockets.map((socket) => socket.closed));
  await waitFor(() => server.inkwell.realtime.stats().connections === 0, 10_000, 'every connection closed');
}

function expectRefusal(refusal: Refusal, status: number): void {
  expect(refusal.status).toBe(status);
  expect(Number(refusal.headers['retry-after'])).toBeGreaterThan(0);
  expect(JSON.parse(refusal.body)).toEqual({ error: expect.any(String) });
}

describe('per client (default 100)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer();
  });
  afterEach(async () => closeAll(server));
  afterAll(async () => {
    await server?.close();
  });

  it('the 101st connection from one address is refused 429 with Retry-After; another address is still accepted', async () => {
    const own = { localAddress: '127.0.0.2' };
    const mine = await Promise.all(Array.from({ length: 100 }, () => open(server, own)));
    expectRefusal(await refused(server, own), 429);
    // The refusal held no place: still 429, and the first hundred are untouched.
    expectRefusal(await refused(server, own), 429);
    expect(server.inkwell.realtime.stats().connections).toBe(100);
    expect(mine.every((socket) => socket.socket.readyState === WebSocket.OPEN)).toBe(true);

    const other = await open(server, { localAddress: '127.0.0.3' });
    expect(other.socket.readyState).toBe(WebSocket.OPEN);

    // Closing one gives its place back.
    mine[0]!.close();
    await mine[0]!.closed;
    await waitFor(() => server.inkwell.realtime.stats().connections === 100, 10_000, 'the closed one released');
    const again = await open(server, own);
    expect(again.socket.readyState).toBe(WebSocket.OPEN);
    expectRefusal(await refused(server, own), 429);
  }, 60_000);

  it('a connection cut by the client (reset, not a close handshake) gives its place back too', async () => {
    const own = { localAddress: '127.0.0.4' };
    const mine = await Promise.all(Array.from({ length: 100 }, () => open(server, own)));
    expectRefusal(await refused(server, own), 429);
    mine[0]!.socket.terminate();
    await waitFor(() => server.inkwell.realtime.stats().connections === 99, 10_000, 'the reset one released');
    await open(server, own);
  }, 60_000);
});

describe('per client behind a proxy (TRUST_PROXY)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ TRUST_PROXY: 'true', WS_MAX_CONNECTIONS_PER_CLIENT: '2' });
  });
  afterAll(async () => {
    await closeAll(server);
    await server?.close();
  });

  it('counts the X-Forwarded-For address, an IPv6 client by its /64, as the rate limits do', async () => {
    const from = (address: string) => ({ headers: { 'x-forwarded-for': `${address}, 10.0.0.1` } });
    await open(server, from('2001:db8:1:1::a'));
    await open(server, from('2001:db8:1:1::b'));
    expectRefusal(await refused(server, from('2001:db8:1:1:ffff::c')), 429);
    await open(server, from('2001:db8:1:2::a'));
    await open(server, from('192.0.2.7'));
  });
});

describe('per instance (WS_MAX_CONNECTIONS)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer({ WS_MAX_CONNECTIONS: '3' });
  });
  afterAll(async () => {
    await closeAll(server);
    await server?.close();
  });

  it('beyond the instance cap the upgrade is refused 503 with Retry-After, whoever asks; a close frees a place', async () => {
    const three = [];
    for (const localAddress of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) three.push(await open(server, { localAddress }));
    expectRefusal(await refused(server, { localAddress: '127.0.0.5' }), 503);
    expectRefusal(await refused(server, { localAddress: '127.0.0.2' }), 503);
    three[1]!.close();
    await three[1]!.closed;
    await waitFor(() => server.inkwell.realtime.stats().connections === 2, 10_000, 'the closed one released');
    await open(server, { localAddress: '127.0.0.5' });
    expect(server.inkwell.realtime.stats().connections).toBe(3);
  });
});
