import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';
import { RawClient, rawPost } from '../../helpers/raw-http.js';
import { startServer, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * Slow and hostile clients (docs/limits.md, "Slow clients"): a request head or body that
 * has not fully arrived HTTP_REQUEST_TIMEOUT_MS after its first byte is answered 408 and
 * its connection closed, however slowly it trickles (one byte every 200 ms here, with the
 * limit at 2 s instead of the default 60 s). node:http enforces it; the service sets its
 * timeouts and how often they are checked.
 */
const LIMIT_MS = 2_000;
let server: TestServer;
let port: number;

beforeAll(async () => {
  server = await startServer({ HTTP_REQUEST_TIMEOUT_MS: String(LIMIT_MS) });
  port = Number(new URL(server.url).port);
});

afterAll(async () => {
  await server?.close();
});

/** Writes `bytes` one at a time, `everyMs` apart, until done or the connection closes. */
async function trickle(client: RawClient, bytes: string, everyMs: number): Promise<void> {
  for (const byte of bytes) {
    if (client.closed) return;
    client.write(byte);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}


/** 408 at the limit (counted from `firstByte`), and the connection closed. */
async function expectTimedOut(client: RawClient, firstByte: number): Promise<void> {
  const response = await client.response(10_000);
  const elapsed = Date.now() - firstByte;
  if (process.env.TEST_LOG_LEVEL) console.log({ status: response.status, elapsed });
  expect(response.status).toBe(408);
  expect(elapsed).toBeGreaterThanOrEqual(LIMIT_MS - 100);
  expect(elapsed).toBeLessThan(LIMIT_MS + 1_500);
  expect(await client.waitClosed(1_000)).toBe(true);
}

describe('HTTP_REQUEST_TIMEOUT_MS', () => {
  it('a head trickling in one byte every 200 ms is answered 408 at the limit, and the connection closed', async () => {
    const client = await RawClient.connect(port);
    const firstByte = Date.now();
    // Far longer than the limit at this pace (100 bytes → 20 s).
    void trickle(client, `GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nhost: inkwell.test\r\nx-padding: ${'a'.repeat(60)}\r\n\r\n`, 200);
    await expectTimedOut(client, firstByte);
  });

  it('a body trickling in is answered 408 at the limit, counted from the first byte of the request', async () => {
    const client = await RawClient.connect(port);
    const body = JSON.stringify({ query: '{ __typename }', padding: 'x'.repeat(80) });
    const request = rawPost(body);
    const head = request.slice(0, request.length - body.length);
    const firstByte = Date.now();
    client.write(head);
    void trickle(client, body, 200);
    await expectTimedOut(client, firstByte);
  });

  it('a request that arrives slowly but within the limit is answered as usual', async () => {
    const client = await RawClient.connect(port);
    const request = rawPost(JSON.stringify({ query: '{ __typename }' }));
    // About 1.2 s in all: four pieces 400 ms apart.
    const quarter = Math.ceil(request.length / 4);
    for (let i = 0; i < 4; i++) {
      client.write(request.slice(i * quarter, (i + 1) * quarter));
      if (i < 3) await new Promise((r) => setTimeout(r, 400));
    }
    const response = await client.response(5_000);
    expect(response.status).toBe(200);
    expect(withoutCost(JSON.parse(response.text))).toEqual({ data: { __typename: 'Query' } });
    // The limit starts again with the next request on the connection.
    await new Promise((r) => setTimeout(r, LIMIT_MS));
    client.write(request);
    expect((await client.response(5_000)).status).toBe(200);
    client.socket.destroy();
  });
});

describe('configuration', () => {
  it('defaults: 60 s for requests, 15 s per statement, 1 s per Redis command', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://db.example/inkwell' });
    expect(config.httpRequestTimeoutMs).toBe(60_000);
    expect(config.redisCommandTimeoutMs).toBe(1_000);
    expect(config.database).toMatchObject({ kind: 'postgres', statementTimeoutMs: 15_000 });
  });

  it.each([
    ['HTTP_REQUEST_TIMEOUT_MS', 'soon'],
    ['HTTP_REQUEST_TIMEOUT_MS', '10'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '0'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '1.5'],
    ['REDIS_COMMAND_TIMEOUT_MS', '-1'],
    ['REDIS_COMMAND_TIMEOUT_MS', '999999999'],
  ])('%s=%s is refused, naming the variable', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(name);
  });
});
