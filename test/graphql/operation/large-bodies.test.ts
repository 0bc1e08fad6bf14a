import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn } from '../../helpers/auth.js';
import { startServer, wsUrl, type TestServer } from '../../helpers/server.js';
import { eventsOf, rawEventStream } from '../sse/helpers.js';
import { wsClient } from '../ws/helpers.js';

/**
 * A body of 64 K characters or more is kept and sent as its UTF-8 bytes
 * (src/graphql/operation/cost-report.ts): its cost report is added to the bytes. Clients
 * see the same JSON either way: executed and from the response cache, over HTTP,
 * Server-Sent Events and WebSocket, with characters of two, three and four bytes.
 */
let server: TestServer;
const TEXT = `Ünïcödé — 漢字 — 🙂 ${'x'.repeat(40_000)}`;
const QUERY = '{ a: posts(limit: 100) { id content } b: posts(limit: 100) { id content } }';

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  const editor = await signIn(server, 'editor@inkwell.test');
  const created = await server.gql('mutation ($a: ID!, $c: String) { createPost(title: "Long", content: $c, authorId: $a, published: true) { id } }', { a: editor.user.id, c: TEXT }, { headers: editor.headers });
  expect(created.body.errors).toBeUndefined();
});
afterAll(() => server.close());

const hits = () => server.inkwell.responseCache!.stats.hits;

function expectAnswer(body: { data: { a: { content: string | null }[]; b: unknown }; extensions: { cost: Record<string, unknown> } }) {
  expect(body.data.a.filter((p) => p.content === TEXT)).toHaveLength(1);
  expect(body.data.b).toEqual(body.data.a);
  expect(body.extensions.cost).toMatchObject({ requestedQueryCost: expect.any(Number), actualQueryCost: expect.any(Number) });
}

describe('a large body', () => {
  it('over HTTP, executed and then from the cache: the same JSON, its length in bytes, its cost report', async () => {
    const texts: string[] = [];
    for (const fromCache of [false, true]) {
      const before = hits();
      const response = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: QUERY }) });
      const text = await response.text();
      expect(response.status).toBe(200);
      expect(text.length).toBeGreaterThan(64 * 1024);
      expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
      expect(hits()).toBe(before + (fromCache ? 1 : 0));
      expectAnswer(JSON.parse(text));
      texts.push(JSON.stringify(JSON.parse(text).data));
    }
    expect(texts[1]).toBe(texts[0]);
  });

  it('over Server-Sent Events', async () => {
    const { status, text } = await rawEventStream(server, { body: { query: QUERY } });
    expect(status).toBe(200);
    const [next, complete] = eventsOf(text);
    expect(next!.event).toBe('next');
    expectAnswer(next!.data);
    expect(complete!.event).toBe('complete');
  });

  it('over WebSocket', async () => {
    const client = wsClient(wsUrl(server));
    try {
      const results: unknown[] = [];
      for await (const result of client.iterate({ query: QUERY })) results.push(result);
      expect(results).toHaveLength(1);
      expectAnswer(results[0] as Parameters<typeof expectAnswer>[0]);
    } finally {
      await client.dispose();
    }
  });
});
