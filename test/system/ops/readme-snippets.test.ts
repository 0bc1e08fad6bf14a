import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../helpers/server.js';
import { account, fixtures, subscribersReady, waitFor, type Account } from '../../graphql/ws/helpers.js';
import { README_HTTP, README_WS, importedPackages, live, readmeBlocks, readmeSnippets, snippet } from '../clients/readme.js';
import { ROOT, scratchDir } from './helpers.js';

/**
 * The README's client snippets, read from README.md itself (test/system/clients/readme.ts):
 * every ```js and ```ts block is named, taken by a test, and preceded by an `npm install`
 * that names each package it imports and the peers those need. The subscription snippets
 * run here, as written, on whichever Node runs the suite: each is saved as an ES module
 * beside the project's node_modules and run by node against a live server. Only the
 * addresses are replaced, and `accessToken` and `id`, which the README leaves to the
 * reader, are defined before it. The other snippets run in test/system/clients/.
 */

/** Every test file under test/system/, read as text. */
function systemTestSources(): { file: string; text: string }[] {
  const base = join(ROOT, 'test', 'system');
  return readdirSync(base, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => ({ file: relative(ROOT, join(base, file)), text: readFileSync(join(base, file), 'utf8') }));
}

/** A package's required peers: what `npm install` must name beside it. */
function requiredPeers(pkg: string): string[] {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as {
    peerDependencies?: Record<string, string>;
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  return Object.keys(manifest.peerDependencies ?? {}).filter((peer) => !manifest.peerDependenciesMeta?.[peer]?.optional);
}

describe("the README's snippets", () => {
  it('every js and ts block is named by a <!-- snippet: … --> comment, each name once', () => {
    const code = readmeBlocks().filter((block) => block.lang === 'js' || block.lang === 'ts');
    expect(code.filter((block) => block.name === undefined).map((block) => `README.md:${block.line}`)).toEqual([]);
    const names = code.map((block) => block.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names.length).toBeGreaterThanOrEqual(9);
  });

  it('every snippet is taken by a test under test/system/ (by its name, through clients/readme.ts or clients/session.ts)', () => {
    const takers = systemTestSources().filter(({ text }) => /from '(\.\.\/clients|\.)\/(readme|session)\.js'/.test(text));
    const untaken = readmeSnippets()
      .map((s) => s.name)
      .filter((name) => !takers.some(({ text }) => text.includes(`'${name}'`)));
    expect(untaken).toEqual([]);
  });

  it.each(readmeSnippets().map((s) => [s.name, s] as const))('%s: the npm install above it names every package it imports, and their peers', (_name, s) => {
    const needed = importedPackages(s.code).flatMap((pkg) => [pkg, ...requiredPeers(pkg)]);
    expect([...new Set(needed)].filter((pkg) => !s.install.includes(pkg)), `README.md:${s.line} installs ${s.install.join(' ')}`).toEqual([]);
  });
});

const graphqlWsSnippet = snippet('subscribe-graphql-ws').code;
const apolloSnippet = snippet('subscribe-apollo').code;
const urqlSnippet = snippet('subscribe-urql').code;
const sseSnippet = snippet('subscribe-sse').code;
const sseUrqlSnippet = snippet('subscribe-sse-urql').code;

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
  await waitFor(() => server.inkwell.backends.pubsub.listenerCount() === 0, 15_000, 'every subscription released');
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Saves the snippet with the live URLs and the reader's values, and starts it. */
function runSnippet(name: string, code: string, values: { accessToken: string; id: string }, address = README_WS) {
  expect(code).toContain(address);
  const prelude = `const accessToken = ${JSON.stringify(values.accessToken)};\nconst id = ${JSON.stringify(values.id)};\n`;
  const file = join(dir, `${name}.mjs`);
  writeFileSync(file, prelude + live(code, server.url));
  const output = { stdout: '', stderr: '' };
  const child = spawn(process.execPath, [file], { cwd: ROOT, env: { ...process.env, NODE_ENV: 'development' } });
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  running = { child, output };
  return running;
}

/** Waits for the snippet's subscription to be live on the server, or for it to fail. */
async function subscribed(snippet: NonNullable<typeof running>, live = () => server.inkwell.realtime.stats().subscribers === 1): Promise<void> {
  await waitFor(
    () => snippet.child.exitCode !== null || snippet.output.stderr !== '' || live(),
    15_000,
    'the snippet to subscribe',
  );
  expect(snippet.output.stderr).toBe('');
  expect(snippet.child.exitCode).toBeNull();
}

describe("the README's subscription snippets", () => {
  it('graphql-ws: prints the reaction added to the post', async () => {
    const make = fixtures(server);
    const post = await make.post(author.user);
    const snippet = runSnippet('graphql-ws', graphqlWsSnippet, { accessToken: reader.token, id: post.id });
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
    const snippet = runSnippet('apollo', apolloSnippet, { accessToken: reader.token, id: post.id });
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

  it('urql: prints the reaction added to the post', async () => {
    const make = fixtures(server);
    const post = await make.post(author.user);
    const snippet = runSnippet('urql', urqlSnippet, { accessToken: reader.token, id: post.id });
    await subscribed(snippet);

    const reacted = await server.gql(
      'mutation ($id: ID!) { addReaction(postId: $id, type: "love") { id } }',
      { id: post.id },
      { headers: { authorization: `Bearer ${author.token}` } },
    );
    expect(reacted.body.errors).toBeUndefined();
    await waitFor(() => snippet.output.stdout.includes('Snippet Author'), 10_000, 'the event on stdout');
    expect(snippet.output.stdout).toMatch(/postReactionAdded: \{\s*type: 'love',\s*user: \{ name: 'Snippet Author' \}\s*\}/);
    expect(snippet.output.stderr).toBe('');
  });

  // GraphQL over SSE: the subscription is live once the server listens on its channel.
  const overSse = () => server.inkwell.backends.pubsub.listenerCount() === 1;

  it('graphql-sse: prints the reaction added to the post', async () => {
    const post = await fixtures(server).post(author.user);
    const snippet = runSnippet('graphql-sse', sseSnippet, { accessToken: reader.token, id: post.id }, README_HTTP);
    await subscribed(snippet, overSse);

    const reacted = await server.gql(
      'mutation ($id: ID!) { addReaction(postId: $id, type: "wow") { id } }',
      { id: post.id },
      { headers: { authorization: `Bearer ${author.token}` } },
    );
    expect(reacted.body.errors).toBeUndefined();
    await waitFor(() => snippet.output.stdout.includes('Snippet Author'), 10_000, 'the event on stdout');
    expect(snippet.output.stdout).toMatch(/postReactionAdded: \{ type: 'wow', user: \{ name: 'Snippet Author' \} \}/);
    expect(snippet.output.stderr).toBe('');
  });

  it('urql over graphql-sse: prints the post once it is published', async () => {
    const post = await fixtures(server).post(author.user, { published: false });
    const snippet = runSnippet('urql-sse', sseUrqlSnippet, { accessToken: reader.token, id: post.id }, README_HTTP);
    await subscribed(snippet, overSse);

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
