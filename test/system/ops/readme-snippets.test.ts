import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, wsUrl, type TestServer } from '../../helpers/server.js';
import { account, fixtures, subscribersReady, waitFor, type Account } from '../../graphql/ws/helpers.js';
import { ROOT, scratchDir } from './helpers.js';

/**
 * The README's client snippets (section "Subscriptions") run as written, on whichever
 * Node runs the suite: each is saved as an ES module beside the project's node_modules
 * and run by node against a live server. Only the URLs are replaced, and `accessToken`
 * and `id`, which the README leaves to the reader, are defined before it.
 */
const README_HTTP = 'http://127.0.0.1:4000/graphql';
const README_WS = 'ws://127.0.0.1:4000/graphql';

/** The ```js blocks of the README's "## Subscriptions" section. */
function subscriptionSnippets(): string[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('\n## Subscriptions\n');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
}

const snippets = subscriptionSnippets();
const graphqlWsSnippet = snippets.find((code) => code.includes("from 'graphql-ws'") && !code.includes('@apollo/client'));
const apolloSnippet = snippets.find((code) => code.includes("from '@apollo/client'"));

let server: TestServer;
let dir: string;
let reader: Account;
let author: Account;
let running: { child: ChildProcess; output: { stdout: string; stderr: string } } | undefined;

beforeAll(async () => {
  server = await startServer();
  dir = scratchDir('readme-snippets');
  reader = await account(server, 'user', 'Snippet Reader');
  author = await account(server, 'editor', 'Snippet Author');
});
afterEach(async () => {
  if (running && running.child.exitCode === null) {
    const exited = new Promise((resolve) => running?.child.once('close', resolve));
    running.child.kill('SIGTERM');
    await exited;
  }
  running = undefined;
  await subscribersReady(server.inkwell.realtime, 0);
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Saves the snippet with the live URLs and the reader's values, and starts it. */
function runSnippet(name: string, code: string, values: { accessToken: string; id: string }) {
  expect(code).toContain(README_WS);
  const live = code.replaceAll(README_WS, wsUrl(server)).replaceAll(README_HTTP, `${server.url}/graphql`);
  const prelude = `const accessToken = ${JSON.stringify(values.accessToken)};\nconst id = ${JSON.stringify(values.id)};\n`;
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, prelude + live);
  const output = { stdout: '', stderr: '' };
  const child = spawn(process.execPath, [file], { cwd: ROOT, env: { ...process.env, NODE_ENV: 'development' } });
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  running = { child, output };
  return running;
}

/** Waits for the snippet's subscription to be live on the server, or for it to fail. */
async function subscribed(snippet: NonNullable<typeof running>): Promise<void> {
  await waitFor(
    () => snippet.child.exitCode !== null || snippet.output.stderr !== '' || server.inkwell.realtime.stats().subscribers === 1,
    15_000,
    'the snippet to subscribe',
  );
  expect(snippet.output.stderr).toBe('');
  expect(snippet.child.exitCode).toBeNull();
}

describe("the README's subscription snippets", () => {
  it('has the graphql-ws and the Apollo Client snippet', () => {
    expect(snippets).toHaveLength(2);
    expect(graphqlWsSnippet).toBeDefined();
    expect(apolloSnippet).toBeDefined();
  });

  it('graphql-ws: prints the reaction added to the post', async () => {
    const make = fixtures(server);
    const post = await make.post(author.user);
    const snippet = runSnippet('graphql-ws', graphqlWsSnippet ?? '', { accessToken: reader.token, id: post.id });
    await subscribed(snippet);

    const reacted = await server.gql(
      'mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }',
      { id: post.id },
      { headers: { authorization: `Bearer ${author.token}` } },
    );
    expect(reacted.body.errors).toBeUndefined();
    await waitFor(() => snippet.output.stdout.includes('Snippet Author'), 10_000, 'the event on stdout');
    expect(snippet.output.stdout).toMatch(/postReactionAdded: \{ type: 'like', user: \{ name: 'Snippet Author' \} \}/);
    expect(snippet.output.stderr).toBe('');
  });

  it('Apollo Client: prints the post once it is published', async () => {
    const make = fixtures(server);
    const post = await make.post(author.user, { published: false });
    const snippet = runSnippet('apollo', apolloSnippet ?? '', { accessToken: reader.token, id: post.id });
    await subscribed(snippet);

    const published = await server.gql(
      'mutation ($id: ID!) { publishPost(id: $id) { id } }',
      { id: post.id },
      { headers: { authorization: `Bearer ${author.token}` } },
    );
    expect(published.body.errors).toBeUndefined();
    await waitFor(() => snippet.output.stdout.includes(post.title), 10_000, 'the event on stdout');
    expect(snippet.output.stdout).toContain('postPublished');
    expect(snippet.output.stdout).toContain(`id: '${post.id}'`);
    expect(snippet.output.stderr).toBe('');
  });
});
