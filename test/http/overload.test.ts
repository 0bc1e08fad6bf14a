import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startServer, wsUrl, type TestServer } from '../helpers/server.js';

/**
 * docs/limits.md, "Overload": while the event loop lags more than
 * OVERLOAD_EVENT_LOOP_DELAY_MS, new requests answer 503 OVERLOADED with Retry-After,
 * /readyz answers 503 and /healthz 200; once the lag is gone, everything is served again.
 * The server runs in this process, so the test makes the lag itself: it keeps the loop
 * busy in 150 ms slices, leaving it free only between them.
 */
let server: TestServer;

beforeAll(async () => {
  server = await startServer({ OVERLOAD_EVENT_LOOP_DELAY_MS: '50' });
});

afterAll(async () => {
  await server?.close();
});

function busyLoop(): { stop(): void } {
  let running = true;
  const spin = () => {
    if (!running) return;
    const end = Date.now() + 150;
    while (Date.now() < end) {
      // the event loop lags while this runs
    }
    setTimeout(spin, 1);
  };
  setTimeout(spin, 1);
  return { stop: () => (running = false) };
}

async function ask(path: string, init?: RequestInit) {
  const response = await fetch(`${server.url}${path}`, init);
  return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as any };
}

const query = (q: string): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: q }) });

async function until<T>(probe: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('overload shedding', () => {
  it('sheds new requests with 503 OVERLOADED while the loop lags, and serves them again after', async () => {
    expect((await ask('/graphql', query('{ __typename }'))).status).toBe(200);
    const lag = busyLoop();
    try {
      const shed = await until(() => ask('/graphql', query('{ __typename }')), (r) => r.status === 503, 'a 503');
      expect(shed.body).toEqual({ errors: [{ message: expect.any(String), extensions: { code: 'OVERLOADED' } }] });
      expect(Number(shed.retryAfter)).toBeGreaterThanOrEqual(1);
      const api = await ask('/api/auth/csrf');
      expect(api.status).toBe(503);
      expect(api.body).toEqual({ error: expect.any(String), code: 'OVERLOADED' });
      expect((await ask('/readyz')).status).toBe(503);
      // A new WebSocket is new work too.
      const socket = new WebSocket(wsUrl(server), 'graphql-transport-ws');
      const upgrade = await new Promise<number | string>((resolve) => {
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('open', () => resolve('open'));
        socket.once('error', () => {});
      });
      socket.terminate();
      expect(upgrade).toBe(503);
      expect((await ask('/healthz')).status).toBe(200);
    } finally {
      lag.stop();
    }
    await until(() => ask('/graphql', query('{ __typename }')), (r) => r.status === 200, 'recovery');
    await until(() => ask('/readyz'), (r) => r.status === 200, '/readyz ready again');
  });

  it('OVERLOAD_EVENT_LOOP_DELAY_MS=0 never sheds for lag, even a loop blocked for whole seconds', async () => {
    const unshed = await startServer({ OVERLOAD_EVENT_LOOP_DELAY_MS: '0' });
    try {
      const blockedUntil = Date.now() + 2_500;
      while (Date.now() < blockedUntil) {
        // no sample of the loop's delay is taken while this runs
      }
      const answers = [];
      for (let i = 0; i < 10; i++) {
        answers.push((await fetch(`${unshed.url}/graphql`, query('{ __typename }'))).status);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(answers).toEqual(Array(10).fill(200));
      expect((await fetch(`${unshed.url}/readyz`)).status).toBe(200);
    } finally {
      await unshed.close();
    }
  });
});
