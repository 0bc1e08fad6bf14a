import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signIn, type SignedIn } from '../helpers/auth.js';
import { startServer, testBackend, type TestServer, withoutCost } from '../helpers/server.js';
import { builtEntry } from '../helpers/service-build.js';

/**
 * Exact, fine-grained response caching over the wire (docs/decisions.md): a write
 * invalidates only the cached responses that read what it changed, every other stays
 * warm (answered from the cache: `responseCache.stats.hits`), and a response is shared
 * by exactly the callers whose view it is. Every way of writing is checked against a
 * fresh execution of the same query (the text plus a comment: a cache entry of its
 * own), so a write path that forgot to bump what it changed fails here.
 */
let server: TestServer;
let admin: SignedIn, editor: SignedIn, editor2: SignedIn, alice: SignedIn, bob: SignedIn;
const ids: Record<string, string> = {};

beforeAll(async () => {
  // The catalogue below reads every field at once.
  server = await startServer({ SEED_DEMO_DATA: 'auto', QUERY_MAX_COMPLEXITY: '100000' });
  const signedIn = await Promise.all(['admin', 'editor', 'editor2', 'alice', 'bob'].map((name) => signIn(server, `${name}@inkwell.test`)));
  [admin, editor, editor2, alice, bob] = signedIn as [SignedIn, SignedIn, SignedIn, SignedIn, SignedIn];
  const posts = await server.inkwell.backends.db.kysely.selectFrom('posts').select(['id', 'title']).execute();
  const byTitle = (title: string) => posts.find((p) => p.title === title)!.id;
  ids.welcome = byTitle('Welcome to Inkwell');
  ids.poetry = byTitle('Poetry in orbit');
  ids.rabbit = byTitle('Down the rabbit hole of GraphQL');
  ids.draft = byTitle('Draft: spring reading list');
  ids.podBay = byTitle('Open the pod bay doors: a review');
  const users = await server.inkwell.backends.db.kysely.selectFrom('users').select(['id', 'email']).execute();
  for (const u of users) ids[u.email!.split('@')[0]!] = u.id;
  const book = await server.inkwell.backends.db.kysely.selectFrom('books').select('id').executeTakeFirstOrThrow();
  ids.book = book.id;
});
afterAll(() => server.close());

const hits = () => server.inkwell.responseCache!.stats.hits;

interface Answer {
  text: string;
  fromCache: boolean;
}

/** Sends a query; tells whether it was answered from the cache. */
async function ask(query: string, variables: Record<string, unknown> = {}, who?: SignedIn): Promise<Answer> {
  const before = hits();
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...who?.headers },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(JSON.parse(text).errors, text).toBeUndefined();
  // The cost reading changes with each request: the answers are compared without it.
  return { text: withoutCost(text), fromCache: hits() === before + 1 };
}

let freshness = 0;
/**
 * The same query executed now, whatever the cache holds: with a variable no request sent
 * before, which the cache key includes (the variables as sent) and execution ignores. The
 * text keeps its compiled document (a new text per check compiled ~1,700 deep documents).
 */
const fresh = (query: string, variables: Record<string, unknown> = {}, who?: SignedIn) =>
  ask(query, { ...variables, fresh: ++freshness }, who);

async function write(query: string, variables: Record<string, unknown>, who: SignedIn) {
  const res = await server.gql(query, variables, { headers: who.headers });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data as any;
}

/** Asks until the answer comes from the cache: at most twice (a hit at once is warm already). */
async function warm(query: string, variables: Record<string, unknown> = {}, who?: SignedIn): Promise<string> {
  const first = await ask(query, variables, who);
  if (first.fromCache) return first.text;
  const second = await ask(query, variables, who);
  expect(second.fromCache, `${query} ${JSON.stringify(variables)} warmed`).toBe(true);
  expect(second.text).toBe(first.text);
  return first.text;
}

describe('a reaction to one post', () => {
  it('leaves unrelated cached responses warm and makes the related ones fresh', async () => {
    const related: [string, Record<string, unknown>][] = [
      ['query ($id: ID!) { post(id: $id) { id likes } }', { id: ids.poetry }],
      ['query ($id: ID!) { post(id: $id) { reactions(limit: 50) { type user { name } } } }', { id: ids.poetry }],
      ['query ($id: ID!) { user(id: $id) { posts(limit: 10) { id likes } } }', { id: ids.carol }],
    ];
    const unrelated: [string, Record<string, unknown>][] = [
      ['query ($id: ID!) { post(id: $id) { id title likes author { name } } }', { id: ids.welcome }],
      ['{ books(limit: 10) { id title } }', {}],
      ['{ users(limit: 100) { id name postsCount } }', {}],
      ['query ($id: ID!) { user(id: $id) { name posts(limit: 10) { id title } } }', { id: ids.carol }],
      ['query ($id: ID!) { user(id: $id) { name posts(limit: 10) { id likes } } }', { id: ids.bob }],
      ['{ posts(limit: 100) { id title } }', {}],
    ];
    const callers = [undefined, alice];
    const before = new Map<string, string>();
    for (const who of callers) {
      for (const [query, variables] of [...related, ...unrelated]) before.set(`${query}${who?.user.id}`, await warm(query, variables, who));
    }

    await write('mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }', { id: ids.poetry }, bob);

    for (const who of callers) {
      for (const [query, variables] of unrelated) {
        const answer = await ask(query, variables, who);
        expect(answer.fromCache, `${query} stays warm`).toBe(true);
        expect(answer.text).toBe(before.get(`${query}${who?.user.id}`));
      }
    }
    for (const [query, variables] of related) {
      // Nothing of the caller was read: one entry for all, executed again once.
      const answer = await ask(query, variables);
      expect(answer.fromCache, `${query} is executed again`).toBe(false);
      expect(answer.text).not.toBe(before.get(`${query}undefined`));
      expect(answer.text).toBe((await fresh(query, variables)).text);
      const asAlice = await ask(query, variables, alice);
      expect(asAlice.fromCache).toBe(true);
      expect(asAlice.text).toBe(answer.text);
    }
  });
});

describe("an edit of a post's content and tags only", () => {
  it('leaves the listings warm (they show neither) and makes whatever shows them fresh', async () => {
    const listings: [string, Record<string, unknown>][] = [
      ['{ posts(limit: 100) { id title createdAt author { id name } } }', {}],
      ['query ($id: ID!) { user(id: $id) { name postsCount posts(limit: 10) { id title published } } }', { id: ids.editor }],
    ];
    const showing: [string, Record<string, unknown>][] = [
      ['{ posts(limit: 100) { id title content } }', {}],
      ['query ($id: ID!) { user(id: $id) { posts(limit: 10) { id tags } } }', { id: ids.editor }],
      ['query ($id: ID!) { post(id: $id) { id content tags } }', { id: ids.welcome }],
    ];
    const before = new Map<string, string>();
    for (const [query, variables] of [...listings, ...showing]) before.set(query, await warm(query, variables));

    await write('mutation ($id: ID!) { updatePost(id: $id, content: "Rewritten", tags: ["fresh"]) { id } }', { id: ids.welcome }, editor);

    for (const [query, variables] of listings) {
      const answer = await ask(query, variables);
      expect(answer.fromCache, `${query} stays warm`).toBe(true);
      expect(answer.text).toBe(before.get(query));
      expect(answer.text).toBe((await fresh(query, variables)).text);
    }
    for (const [query, variables] of showing) {
      const answer = await ask(query, variables);
      expect(answer.fromCache, `${query} is executed again`).toBe(false);
      expect(answer.text).not.toBe(before.get(query));
      expect(answer.text).toBe((await fresh(query, variables)).text);
    }
  });
});

describe('a reaction of another type than like', () => {
  it('leaves the like counts warm and makes the reaction lists fresh', async () => {
    const likes: [string, Record<string, unknown>][] = [
      ['query ($id: ID!) { post(id: $id) { id title likes } }', { id: ids.poetry }],
      ['query ($id: ID!) { user(id: $id) { posts(limit: 10) { id likes } } }', { id: ids.carol }],
    ];
    const reactions = 'query ($id: ID!) { post(id: $id) { reactions(limit: 50) { type user { name } } } }';
    const before = new Map<string, string>();
    for (const [query, variables] of likes) before.set(query, await warm(query, variables));
    const listed = await warm(reactions, { id: ids.poetry });

    await write('mutation ($id: ID!) { addReaction(postId: $id, type: "insightful") { id } }', { id: ids.poetry }, bob);

    for (const [query, variables] of likes) {
      const answer = await ask(query, variables);
      expect(answer.fromCache, `${query} stays warm`).toBe(true);
      expect(answer.text).toBe(before.get(query));
      expect(answer.text).toBe((await fresh(query, variables)).text);
    }
    const after = await ask(reactions, { id: ids.poetry });
    expect(after.fromCache).toBe(false);
    expect(after.text).not.toBe(listed);
    expect(after.text).toContain('insightful');
    expect(after.text).toBe((await fresh(reactions, { id: ids.poetry })).text);
  });
});

describe('who shares a cached response', () => {
  it('a response that read nothing of the caller serves everyone', async () => {
    const query = 'query ($id: ID!) { post(id: $id) { id title author { name } } books(limit: 3) { title } }';
    const anonymous = await warm(query, { id: ids.welcome });
    for (const who of [alice, editor, admin]) {
      const answer = await ask(query, { id: ids.welcome }, who);
      expect(answer.fromCache).toBe(true);
      expect(answer.text).toBe(anonymous);
    }
  });

  it('a response that read the role serves that role only', async () => {
    // A draft: editors see it (the role decides), others do not.
    const query = 'query ($id: ID!) { post(id: $id) { id title } }';
    const asEditor = await warm(query, { id: ids.draft }, editor);
    expect(JSON.parse(asEditor).data.post.id).toBe(ids.draft);
    const asOtherEditor = await ask(query, { id: ids.draft }, editor2);
    expect(asOtherEditor.fromCache).toBe(true);
    expect(asOtherEditor.text).toBe(asEditor);
    const asAdmin = await ask(query, { id: ids.draft }, admin);
    expect(asAdmin.fromCache).toBe(false);
    expect(JSON.parse(asAdmin.text).data.post.id).toBe(ids.draft);
    for (const who of [undefined, alice]) {
      const answer = await ask(query, { id: ids.draft }, who);
      expect(answer.fromCache).toBe(false);
      expect(JSON.parse(answer.text).data.post).toBeNull();
    }
  });

  it("a response that read the caller's identity serves that caller only", async () => {
    const query = '{ me { id email } users(limit: 100) { id email } }';
    const asAlice = await warm(query, {}, alice);
    const asBob = await ask(query, {}, bob);
    expect(asBob.fromCache).toBe(false);
    expect(JSON.parse(asBob.text).data.me.id).toBe(bob.user.id);
    expect(JSON.parse(asAlice).data.me.id).toBe(alice.user.id);
    expect((await ask(query, {}, alice)).text).toBe(asAlice);
  });

  it("a response that asked whether the caller was someone, who was not, serves the role's other callers: never that someone", async () => {
    // Alice's page: her email and her draft are hers alone; everyone else of a role sees the same page.
    const query = 'query ($id: ID!) { user(id: $id) { id email postsCount posts(limit: 10) { id published } } }';
    const asBob = await warm(query, { id: ids.alice }, bob);
    const page = JSON.parse(asBob).data.user;
    expect(page.email).toBeNull();
    expect(page.posts.every((p: { published: boolean }) => p.published)).toBe(true);
    const carol = await signIn(server, 'carol@inkwell.test');
    const asCarol = await ask(query, { id: ids.alice }, carol);
    expect(asCarol.fromCache).toBe(true);
    expect(asCarol.text).toBe(asBob);
    const asAlice = await ask(query, { id: ids.alice }, alice);
    expect(asAlice.fromCache).toBe(false);
    const own = JSON.parse(asAlice.text).data.user;
    expect(own.email).toBe('alice@inkwell.test');
    expect(own.posts.some((p: { published: boolean }) => !p.published)).toBe(true);
    expect(own.postsCount).toBe(page.postsCount + 1);
    // Her own answer is kept for her; Bob's is still everyone else's.
    expect(await ask(query, { id: ids.alice }, alice)).toEqual({ text: asAlice.text, fromCache: true });
    expect(await ask(query, { id: ids.alice }, bob)).toEqual({ text: asBob, fromCache: true });
    // Another role is another audience: an editor sees the draft.
    const asEditor = await ask(query, { id: ids.alice }, editor);
    expect(asEditor.fromCache).toBe(false);
    expect(JSON.parse(asEditor.text).data.user.posts.some((p: { published: boolean }) => !p.published)).toBe(true);
  });

  it('with drafts among the newest posts, readers who wrote none share the front page; their authors do not', async () => {
    const query = '{ posts(limit: 100) { id title published } }';
    const asBob = await warm(query, {}, bob);
    expect(JSON.parse(asBob).data.posts.every((p: { published: boolean }) => p.published)).toBe(true);
    const carol = await signIn(server, 'carol@inkwell.test');
    expect(await ask(query, {}, carol)).toEqual({ text: asBob, fromCache: true });
    const asAlice = await ask(query, {}, alice);
    expect(asAlice.fromCache).toBe(false);
    expect(JSON.parse(asAlice.text).data.posts.filter((p: { published: boolean }) => !p.published).map((p: { id: string }) => p.id)).toHaveLength(1);
  });

  it('admins share the emails they see; a role change moves a caller to the new role at once', async () => {
    const query = '{ users(limit: 100) { id email } }';
    const asAdmin = await warm(query, {}, admin);
    expect(JSON.parse(asAdmin).data.users.every((u: { email: string | null }) => u.email !== null)).toBe(true);
    const carol = await signIn(server, 'carol@inkwell.test');
    const before = await ask(query, {}, carol);
    expect(before.fromCache).toBe(false);
    expect(JSON.parse(before.text).data.users.filter((u: { email: string | null }) => u.email !== null)).toHaveLength(1);
    await write('mutation ($id: ID!) { updateUser(id: $id, role: "admin") { role } }', { id: ids.carol }, admin);
    // The list shows Carol's new role, so the admins' entry is executed again; then shared.
    const promoted = await ask(query, {}, carol);
    expect(JSON.parse(promoted.text).data.users.every((u: { email: string | null }) => u.email !== null)).toBe(true);
    const again = await ask(query, {}, admin);
    expect(again.fromCache).toBe(true);
    expect(again.text).toBe(promoted.text);
    await write('mutation ($id: ID!) { updateUser(id: $id, role: "user") { role } }', { id: ids.carol }, admin);
  });
});

describe('writes the service does not announce', () => {
  it('a write to a cached table outside src/domain invalidates everything; one to another table nothing', async () => {
    const query = '{ users(limit: 100) { id name } }';
    const other = 'query ($id: ID!) { post(id: $id) { id title } }';
    await warm(query);
    await warm(other, { id: ids.welcome });
    // Sessions are not read by cached responses: both stay warm.
    await server.inkwell.backends.db.kysely.updateTable('sessions').set({ revoked_at: null }).where('id', '=', 'none').execute();
    expect((await ask(query)).fromCache).toBe(true);
    expect((await ask(other, { id: ids.welcome })).fromCache).toBe(true);
    // A user renamed behind src/domain's back: nobody knows what changed, so nothing is served.
    await server.inkwell.backends.db.kysely.updateTable('users').set({ name: 'Dave Renamed' }).where('id', '=', ids.dave!).execute();
    const after = await ask(query);
    expect(after.fromCache).toBe(false);
    expect(after.text).toContain('Dave Renamed');
    expect((await ask(other, { id: ids.welcome })).fromCache).toBe(false);
  });
});

describe('the operator command in another process (npm run user:role)', () => {
  /** Runs the operator command (src/cli/user-role.ts, compiled) against the server's database (and Redis, with its key prefix). */
  async function userRole(email: string, role: string): Promise<number | null> {
    const command = await builtEntry('cli/user-role');
    const { config } = server.inkwell;
    const database = config.database.kind === 'sqlite' ? `file:${config.database.file}` : config.database.url;
    const redis: Record<string, string> = config.redisUrl ? { REDIS_URL: config.redisUrl, REDIS_KEY_PREFIX: config.redisKeyPrefix } : {};
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [command, email, role], {
        env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: database, ...redis },
        stdio: 'ignore',
      });
      child.on('error', reject);
      child.on('close', resolve);
    });
  }

  it('a role change is seen at once: in the data, and in what the caller may see', async () => {
    const roles = '{ users(limit: 100) { id role } }';
    const drafts = '{ posts(limit: 100) { id published } }';
    const books = '{ books(limit: 2) { id } }';
    await warm(roles);
    await warm(drafts, {}, bob);
    await warm(books);
    expect(JSON.parse((await ask(drafts, {}, bob)).text).data.posts.every((p: { published: boolean }) => p.published)).toBe(true);

    expect(await userRole('bob@inkwell.test', 'editor')).toBe(0);

    const after = await ask(roles);
    expect(after.fromCache).toBe(false);
    expect(JSON.parse(after.text).data.users.find((u: { id: string }) => u.id === bob.user.id).role).toBe('editor');
    // The role is re-read per request: Bob sees the drafts now.
    expect(JSON.parse((await ask(drafts, {}, bob)).text).data.posts.some((p: { published: boolean }) => !p.published)).toBe(true);
    // With Redis the command bumped exactly what it changed; on SQLite the service saw
    // a commit by another process on the file, which invalidates everything.
    expect((await ask(books)).fromCache).toBe(testBackend === 'postgres');
  });
});

/**
 * Reads covering every field of the schema, for each kind of caller. After each write,
 * every one answered through the cache must equal a fresh execution.
 */
function catalogue(): [string, Record<string, unknown>][] {
  const postFields = 'id title content published tags likes createdAt author { id name email role } reactions(limit: 10) { id type user { id name } post { id title } }';
  const userFields = `id name email age avatar role createdAt postsCount posts(limit: 10) { ${postFields} }`;
  return [
    [`{ users(limit: 100) { ${userFields} } }`, {}],
    ['query ($role: String) { users(role: $role, limit: 100) { id name role } }', { role: 'editor' }],
    [`{ posts(limit: 100) { ${postFields} } }`, {}],
    [`{ posts(limit: 2, offset: 1) { id title published } }`, {}],
    ...['welcome', 'poetry', 'rabbit', 'draft', 'podBay'].map(
      (name): [string, Record<string, unknown>] => [`query ($id: ID!) { post(id: $id) { ${postFields} } }`, { id: ids[name] }],
    ),
    ...['dave', 'carol', 'editor2', 'alice'].map(
      (name): [string, Record<string, unknown>] => [`query ($id: ID!) { user(id: $id) { ${userFields} } }`, { id: ids[name] }],
    ),
    ['{ books(limit: 100) { id title author year } }', {}],
    ['query ($id: ID!) { book(id: $id) { id title author year } }', { id: ids.book }],
    [`{ me { ${userFields} } }`, {}],
  ];
}

describe('every write path leaves no cached response stale', () => {
  let callers: (SignedIn | undefined)[];
  let newPost: string;
  beforeAll(() => {
    // Two plain users: an answer kept for their role less some users must never reach those users.
    callers = [undefined, alice, bob, editor2, admin];
  });

  /** Warms the catalogue for every caller, runs `change`, then compares each cached answer with a fresh one. */
  async function afterWrite(change: () => Promise<unknown>) {
    const reads = catalogue();
    const warmed = new Map<string, string>();
    // Warmed one at a time: warming tells a hit by the cache's hit count.
    for (const who of callers) for (const [query, variables] of reads) warmed.set(key(query, variables, who), await warm(query, variables, who));
    await change();
    // Checked together, each pair of cached and fresh in order: the checks compare texts
    // only, and one at a time they made this the slowest file of the suite.
    let changed = 0;
    for (const who of callers) {
      await Promise.all(
        reads.map(async ([query, variables]) => {
          const cached = await ask(query, variables, who);
          const executed = await fresh(query, variables, who);
          expect(cached.text, `${query} ${JSON.stringify(variables)} as ${who?.user.email ?? 'anonymous'}`).toBe(executed.text);
          if (cached.text !== warmed.get(key(query, variables, who))) changed++;
        }),
      );
    }
    // The write showed in the catalogue: this check could have failed.
    expect(changed).toBeGreaterThan(0);
  }
  const key = (query: string, variables: object, who?: SignedIn) => `${who?.user.id}${JSON.stringify(variables)}${query}`;

  it('createUser', () =>
    afterWrite(() => write('mutation { createUser(name: "Erin", email: "erin@inkwell.test", role: "editor") { id } }', {}, admin)));
  it('updateUser', () =>
    afterWrite(() => write('mutation ($id: ID!) { updateUser(id: $id, name: "Carol D.", age: 41, avatar: "https://example.test/c.png") { id } }', { id: ids.carol }, admin)));
  it('updateUser (role)', () => afterWrite(() => write('mutation ($id: ID!) { updateUser(id: $id, role: "editor") { id } }', { id: ids.alice }, admin)));
  it('createPost (a draft)', () =>
    afterWrite(async () => {
      const data = await write('mutation ($a: ID!) { createPost(title: "Fresh draft", authorId: $a) { id } }', { a: ids.editor2 }, editor2);
      newPost = data.createPost.id;
    }));
  it('updatePost', () => afterWrite(() => write('mutation ($id: ID!) { updatePost(id: $id, title: "Fresh, renamed", tags: ["t"]) { id } }', { id: newPost }, editor2)));
  it('updatePost (content and tags only, a published post)', () =>
    afterWrite(() => write('mutation ($id: ID!) { updatePost(id: $id, content: "Edited again", tags: ["e"]) { id } }', { id: ids.podBay }, admin)));
  it('publishPost', () => afterWrite(() => write('mutation ($id: ID!) { publishPost(id: $id) { id } }', { id: newPost }, editor2)));
  it('createPost (published)', () =>
    afterWrite(() => write('mutation ($a: ID!) { createPost(title: "Out now", authorId: $a, published: true) { id } }', { a: ids.editor2 }, editor2)));
  it('addReaction', () => afterWrite(() => write('mutation ($id: ID!) { addReaction(postId: $id, type: "like") { id } }', { id: ids.rabbit }, alice)));
  it('deletePost', () => afterWrite(() => write('mutation ($id: ID!) { deletePost(id: $id) }', { id: ids.poetry }, admin)));
  it('addBook', () => afterWrite(() => write('mutation { addBook(title: "Fresh Book", author: "Someone", year: 2001) { id } }', {}, admin)));
  it('deleteUser (their posts, their reactions elsewhere)', () =>
    afterWrite(() => write('mutation ($id: ID!) { deleteUser(id: $id) }', { id: ids.dave }, admin)));
  it('registration', () =>
    afterWrite(async () => {
      const res = await fetch(`${server.url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Reggie', email: 'reggie@inkwell.test', password: 'a long enough password' }),
      });
      expect(res.status, await res.clone().text()).toBe(201);
    }));
  it('an external (OAuth) sign-in that creates an account', () =>
    afterWrite(async () => {
      const signedIn = await server.inkwell.auth.external.signIn({
        provider: 'example',
        accountId: 'ext-1',
        email: 'oscar@inkwell.test',
        emailVerified: true,
        name: 'Oscar Outside',
      });
      expect(signedIn).toMatchObject({ ok: true, created: true });
    }));
  it('setRole (the operator command, in process)', () => afterWrite(() => server.inkwell.services.users.setRole('carol@inkwell.test', 'editor')));
});
