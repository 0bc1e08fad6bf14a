import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RawSocket } from '../ws/helpers.js';
import { startServer, wsUrl, type TestServer, withoutCost } from '../../helpers/server.js';

/**
 * Deep and wide input, on every endpoint and both transports (docs/limits.md): input
 * nested deeper than 100 levels — in the JSON body, the variables, the extensions or
 * the document — answers 400 `BAD_REQUEST`, never a 500, a crash or a stack overflow,
 * and logs no error. 100 levels pass the check. Wide input is answered normally.
 */
let server: TestServer;
let errorLog: ReturnType<typeof vi.spyOn>;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  errorLog = vi.spyOn(server.inkwell.app.log, 'error');
});
afterAll(async () => {
  // Refusing bad input is not an error of the service.
  expect(errorLog).not.toHaveBeenCalled();
  const alive = await server.gql('{ __typename }');
  expect(withoutCost(alive.body)).toEqual({ data: { __typename: 'Query' } });
  await server.close();
});

/** `depth` nested arrays around a number, as JSON text: `[[[1]]]` is depth 3. */
const deepArrayJson = (depth: number) => '['.repeat(depth) + '1' + ']'.repeat(depth);
/** `depth` nested objects, as JSON text: `{"a":{"a":1}}` is depth 2. */
const deepObjectJson = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

async function post(body: string) {
  const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: response.status, body: (await response.json()) as any };
}

function expectTooDeep(answer: { status: number; body: any }) {
  expect(answer.status).toBe(400);
  expect(answer.body).not.toHaveProperty('data');
  expect(answer.body.errors[0].extensions.code).toBe('BAD_REQUEST');
  expect(answer.body.errors[0].message).toMatch(/nested deeper than 100 levels/);
}

const QUERY = 'query ($v: [[Int]]) { __typename }';

describe('HTTP POST', () => {
  it('variables nested 200,000 levels deep: 400, not a stack overflow', async () => {
    // Both under the 1 MiB body limit.
    for (const deep of [deepArrayJson(200_000), deepObjectJson(150_000)]) {
      expectTooDeep(await post(`{"query":${JSON.stringify(QUERY)},"variables":{"v":${deep}}}`));
    }
  });

  it('extensions and unknown members nested deeply: 400', async () => {
    expectTooDeep(await post(`{"query":"{ __typename }","extensions":{"x":${deepObjectJson(5_000)}}}`));
    expectTooDeep(await post(`{"query":"{ __typename }","other":${deepArrayJson(150)}}`));
  });

  it('exactly 100 levels in the body pass the check (and are judged on their merits)', async () => {
    // Body object → variables → 98 arrays: 100 levels in all.
    const ok = await post(`{"query":"query ($v: JSON) { __typename }","variables":{"v":${deepArrayJson(98)}}}`);
    expect(ok.status).toBe(400);
    expect(ok.body.errors[0].extensions.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const deeper = await post(`{"query":"{ __typename }","variables":{"v":${deepArrayJson(99)}}}`);
    expectTooDeep(deeper);
  });

  it('a document nested 101 levels deep: 400 BAD_REQUEST; a deep list value too', async () => {
    const selection = '{ a '.repeat(101) + '}'.repeat(101);
    expectTooDeep(await post(JSON.stringify({ query: selection })));
    const listValue = `{ users(role: ${'['.repeat(150)}"x"${']'.repeat(150)}) { id } }`;
    expectTooDeep(await post(JSON.stringify({ query: listValue })));
  });

  it('wide input is answered normally', async () => {
    const wideVariables = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`k${i}`, i]));
    const wide = await post(JSON.stringify({ query: '{ __typename }', variables: wideVariables }));
    expect(withoutCost(wide.body)).toEqual({ data: { __typename: 'Query' } });
    expect(wide.status).toBe(200);
    expect(wide.body.data).toEqual({ __typename: 'Query' });
    const wideList = await post(JSON.stringify({ query: '{ __typename }', variables: { ids: Array.from({ length: 100_000 }, (_, i) => String(i)) } }));
    expect(wideList.status).toBe(200);
  });
});

describe('HTTP GET', () => {
  it('deep variables in the query string: 400', async () => {
    const search = new URLSearchParams({ query: QUERY, variables: `{"v":${deepArrayJson(1_000)}}` });
    const response = await fetch(`${server.url}/graphql?${search}`, { headers: { accept: 'application/json' } });
    expectTooDeep({ status: response.status, body: await response.json() });
  });
});

describe('the account area', () => {
  it('deep JSON bodies on register and login are refused cleanly (4xx, never 500)', async () => {
    for (const path of ['/api/auth/register', '/api/auth/login', '/api/auth/refresh']) {
      for (const body of [`{"email":${deepArrayJson(100_000)},"password":"x"}`, deepObjectJson(100_000)]) {
        const response = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(response.status, path).toBeGreaterThanOrEqual(400);
        expect(response.status, path).toBeLessThan(500);
        expect(await response.json()).toHaveProperty('error');
      }
    }
  });
});

describe('WebSocket', () => {
  it('deep variables in a subscribe message: an error for that operation, the socket stays open', async () => {
    const socket = await RawSocket.open(wsUrl(server));
    await socket.init();
    // 20,000 levels: 40 KB, under the 64 KB message limit.
    socket.send(`{"id":"deep","type":"subscribe","payload":{"query":${JSON.stringify(QUERY)},"variables":{"v":${deepArrayJson(20_000)}}}}`);
    const error = await socket.next((m) => m.id === 'deep');
    expect(error.type).toBe('error');
    expect(error.payload[0].extensions.code).toBe('BAD_REQUEST');
    socket.subscribe('after', '{ __typename }');
    expect(withoutCost((await socket.next((m) => m.id === 'after')).payload)).toEqual({ data: { __typename: 'Query' } });
    socket.close();
  });
});
