import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type SignedIn } from '../helpers/auth.js';
import { startServer, type TestServer, withoutCost } from '../helpers/server.js';

/**
 * Requests that join a running execution (docs/caching.md, "Joining an execution"), over
 * real HTTP: the same query of the same caller, or of callers who share its answer,
 * arriving while it executes, is answered by that one execution, byte for byte; a
 * write's answer still reaches every request sent after it. `responseCache.stats` counts executions (`misses`) and answers served (`hits`).
 */
let server: TestServer;
let admin: SignedIn;
let readers: SignedIn[];
let welcome: string;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  admin = await signIn(server, 'admin@inkwell.test');
  readers = await Promise.all(['alice', 'bob', 'carol', 'dave'].map((name) => signIn(server, `${name}@inkwell.test`)));
  const post = await server.inkwell.backends.db.kysely.selectFrom('posts').select('id').where('title', '=', 'Welcome to Inkwell').executeTakeFirstOrThrow();
  welcome = post.id;
});
afterAll(() => server.close());

const stats = () => ({ ...server.inkwell.responseCache!.stats });
const FRONT_PAGE = '{ posts(limit: 20) { id title createdAt author { id name } } }';

async function ask(query: string, caller?: SignedIn): Promise<string> {
  const headers = { 'content-type': 'application/json', ...caller?.headers };
  const res = await fetch(`${server.url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query }) });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return withoutCost(text);
}

async function retitle(title: string): Promise<void> {
  const res = await server.gql('mutation($id: ID!, $title: String) { updatePost(id: $id, title: $title) { id } }', { id: welcome, title }, { headers: admin.headers });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
}

describe('joining a running execution', () => {
  it('the same query sent together by one caller runs once, and every request gets its answer', async () => {
    // Once, and made old by a write: the cache knows what it reads (with Redis, fetched with its lookup) and holds no entry.
    await ask(FRONT_PAGE);
    await retitle('Welcome to Inkwell, again');
    const before = stats();
    const answers = await Promise.all(Array.from({ length: 8 }, () => ask(FRONT_PAGE)));
    const after = stats();
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toContain('Welcome to Inkwell, again');
    expect(after.misses - before.misses).toBe(1);
    expect(after.hits - before.hits).toBe(7);
  });

  it("callers who share a published post's page join one execution; each caller's `me` runs for them", async () => {
    const page = `{ post(id: "${welcome}") { id title likes author { id name } } }`;
    await ask(page);
    await retitle('Welcome to Inkwell, shared');
    let before = stats();
    const answers = await Promise.all([undefined, ...readers].map((caller) => ask(page, caller)));
    let after = stats();
    expect(new Set(answers).size).toBe(1);
    expect(answers[0]).toContain('Welcome to Inkwell, shared');
    expect(after.misses - before.misses).toBe(1);
    expect(after.hits - before.hits).toBe(4);

    before = stats();
    const mine = await Promise.all(readers.map((caller) => ask('{ me { id email } }', caller)));
    after = stats();
    readers.forEach((caller, i) => expect(mine[i]).toContain(caller.user.email));
    expect(after.misses - before.misses).toBe(readers.length);
  });

  it('a request sent after a write was answered sees it, whatever was running', async () => {
    for (let round = 0; round < 5; round++) {
      const title = `Welcome, round ${round}`;
      const running = Promise.all([ask(FRONT_PAGE), ask(FRONT_PAGE)]);
      await retitle(title);
      expect(await ask(FRONT_PAGE)).toContain(title);
      await running;
    }
  });
});
