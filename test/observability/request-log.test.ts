import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PASSWORD, cookieOf, json, login, register, uniqueEmail } from '../auth/helpers.js';
import { collect, waitFor, wsClient } from '../graphql/ws/helpers.js';
import { testBackend, withoutCost } from '../helpers/server.js';
import { startService, type ServiceProcess } from './service.js';

// The service as `npm start` runs it, logging at `info`: every request writes exactly one
// line — method, URL, status, duration, and for GraphQL the operation, the caller's id
// and the response-cache outcome — and never a credential. Read from its stdout.

interface Line {
  msg: string;
  transport?: string;
  reqId?: string;
  method?: string;
  url?: string;
  status?: number;
  durationMs?: number;
  cache?: string;
  caller?: string;
  operation?: string;
  operationType?: string;
}

const lines = (output: string): Line[] =>
  output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Line);

describe('request logs', () => {
  let service: ServiceProcess;

  beforeAll(async () => {
    service = await startService({ LOG_LEVEL: 'info' });
  });

  afterAll(async () => {
    await service?.stop();
  });

  it('one line per request with operation, caller id, status, duration and cache outcome; no credential', async () => {
    const email = uniqueEmail('logline');
    const { id: userId } = await register(service.url, email);
    const session = await login(service.url, email);
    const refreshToken = session.refreshCookie.slice('refresh-token='.length);

    const me = (headers: Record<string, string>) =>
      fetch(`${service.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query: 'query WhoAmI { me { id } }' }),
      });
    const first = await me({ authorization: `Bearer ${session.accessToken}` });
    expect(withoutCost(await first.json())).toEqual({ data: { me: { id: userId } } });
    const second = await me({ authorization: `Bearer ${session.accessToken}` });
    expect(second.status).toBe(200);
    // By cookie (a same-origin browser) and anonymously, with an error.
    expect((await me({ cookie: session.authCookie })).status).toBe(200);
    const refused = await fetch(`${service.url}/graphql`, json({ query: 'query Broken { nope }' }));
    expect(refused.status).toBe(400);
    const refreshed = await fetch(`${service.url}/api/auth/refresh`, { method: 'POST', headers: { cookie: session.refreshCookie } });
    expect(refreshed.status).toBe(200);
    const rotated = cookieOf(refreshed, 'refresh-token')!.value;

    // A line is written once the response has gone out: it may follow the client's next step.
    const ours = (l: Line) => l.url === '/graphql' || l.url === '/api/auth/refresh';
    const deadline = Date.now() + 5_000;
    while (lines(service.output()).filter(ours).length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const requests = lines(service.output()).filter((l) => l.msg === 'request completed');
    // Seven requests (register, login, three queries, a refused one, a refresh): seven lines.
    expect(requests).toHaveLength(7);
    expect(new Set(requests.map((l) => l.reqId)).size).toBe(7);
    expect(service.output()).not.toContain('incoming request');

    const [miss, hit, byCookie, broken, refresh] = requests.filter(ours);
    expect(miss).toMatchObject({ method: 'POST', url: '/graphql', status: 200, operation: 'WhoAmI', operationType: 'query', caller: userId, cache: 'miss' });
    expect(hit).toMatchObject({ status: 200, operation: 'WhoAmI', caller: userId, cache: 'hit' });
    expect(byCookie).toMatchObject({ status: 200, operation: 'WhoAmI', caller: userId, cache: 'hit' });
    expect(broken).toMatchObject({ status: 400, url: '/graphql', caller: 'anonymous', cache: 'none', operationType: 'none' });
    expect(refresh).toMatchObject({ method: 'POST', url: '/api/auth/refresh', status: 200, cache: 'none' });
    for (const line of requests) {
      expect(typeof line.durationMs).toBe('number');
      expect(line.durationMs).toBeGreaterThan(0);
    }

    // Over WebSocket: a line per operation, the same fields.
    const client = wsClient(`${service.url.replace(/^http/, 'ws')}/graphql`, { authorization: `Bearer ${session.accessToken}` });
    try {
      const overWs = collect(client, { query: 'query OverTheSocket { me { id } }' });
      await waitFor(() => overWs.completed, 5_000, 'the query over WebSocket');
      expect(overWs.results.map(withoutCost)).toEqual([{ data: { me: { id: userId } } }]);
    } finally {
      await client.dispose();
    }
    await waitFor(() => lines(service.output()).some((l) => l.operation === 'OverTheSocket'), 5_000, 'the WebSocket line');
    expect(lines(service.output()).find((l) => l.operation === 'OverTheSocket')).toMatchObject({
      msg: 'operation completed',
      transport: 'ws',
      status: 200,
      operationType: 'query',
      caller: userId,
    });

    const output = service.output();
    for (const secret of [session.accessToken, refreshToken, rotated, session.authCookie.slice('auth-token='.length), PASSWORD]) {
      expect(output.includes(secret), `the log holds ${secret.slice(0, 12)}…`).toBe(false);
    }
  });
});

// The database plays no part: once is enough.
describe.runIf(testBackend === 'sqlite')('request logs on a terminal', () => {
  it('are human-readable (pino-pretty) instead of JSON', async () => {
    const service = await startService({ LOG_LEVEL: 'info' }, { terminal: true });
    try {
      const response = await fetch(`${service.url}/graphql`, json({ query: 'query Pretty { users(limit: 1) { id } }' }));
      expect(response.status).toBe(200);
      const deadline = Date.now() + 5_000;
      while (!/operation\S*: \S*"Pretty"/.test(service.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const output = service.output().replace(/\x1b\[[0-9;]*m/g, '');
      // pino-pretty shows the `caller` field in the line's head.
      expect(output).toMatch(/INFO <anonymous>: request completed/);
      expect(output).toMatch(/operation: "Pretty"/);
      expect(output).not.toMatch(/^\{"level"/m);
    } finally {
      await service.stop();
    }
  });
});
