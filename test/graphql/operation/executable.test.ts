import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INTERPRETED_EXECUTIONS } from '../../../src/graphql/operation/executable.js';
import { signIn, type SignedIn } from '../../helpers/auth.js';
import { startServer, withoutCost, type TestServer } from '../../helpers/server.js';

/**
 * An operation runs on graphql-js its first INTERPRETED_EXECUTIONS times and on
 * graphql-jit's compiled code after (src/graphql/operation/executable.ts): clients must
 * not tell the two apart. Each operation is sent until two answers came from compiled
 * code, with a variable the response cache keys on and execution ignores, so that each
 * one executes: the answers must be the same text, data, errors and all.
 */
let server: TestServer;
let alice: SignedIn;

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto', QUERY_MAX_COMPLEXITY: '100000' });
  alice = await signIn(server, 'alice@inkwell.test');
});
afterAll(() => server.close());

let run = 0;
async function answers(query: string, variables: Record<string, unknown> = {}, who?: SignedIn): Promise<string[]> {
  const texts: string[] = [];
  for (let i = 0; i < INTERPRETED_EXECUTIONS + 2; i++) {
    const response = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...who?.headers },
      body: JSON.stringify({ query, variables: { ...variables, run: ++run } }),
    });
    texts.push(`${response.status} ${withoutCost(await response.text())}`);
  }
  return texts;
}

const POST = 'id title content published tags likes createdAt author { id name email role } reactions(limit: 10) { id type user { name } post { id } }';
const USER = `id name email age avatar role createdAt postsCount posts(limit: 10) { ${POST} }`;

describe('the first executions (graphql-js) and the next ones (compiled)', () => {
  it.each([
    ['every field of users, posts and books', `{ users(limit: 100) { ${USER} } posts(limit: 100) { ${POST} } books(limit: 10) { id title author year } }`],
    ['fragments, aliases, __typename and directives', '{ a: posts(limit: 2) { ...P } b: posts(limit: 2, offset: 1) { ...P title @skip(if: true) } } fragment P on Post { __typename id title @include(if: true) }'],
    ['a missing post (null)', '{ post(id: "no-such-post") { id title } }'],
  ])('%s: the same answer each time', async (_name, query) => {
    for (const who of [undefined, alice]) {
      // A document of its own per caller (a comment differs): each caller's first answer is graphql-js's.
      const [first, ...next] = await answers(`${query} # as ${who?.user.email ?? 'anonymous'}`, {}, who);
      expect(first).toMatch(/^200 \{"data":\{/);
      for (const text of next) expect(text).toBe(first);
    }
  });

  it('a field error (a mutation refused in its resolver): the same errors and data', async () => {
    const [first, ...next] = await answers('mutation { addBook(title: "T", author: "A", year: 2000) { id } }');
    expect(first).toContain('"errors"');
    expect(first).toContain('"addBook"');
    for (const text of next) expect(text).toBe(first);
  });

  it('variables that do not match their types: the same refusal', async () => {
    const [first, ...next] = await answers('query ($id: ID!, $n: Int) { post(id: $id) { id } books(limit: $n) { id } }', { id: 'x', n: 'many' });
    expect(first).toMatch(/^400 /);
    expect(first).toContain('Variable \\"$n\\" got invalid value');
    for (const text of next) expect(text).toBe(first);
  });
});
