import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startLoad } from '../../helpers/load.js';
import { processBackend, type ProcessBackend } from '../../helpers/process-backend.js';
import { eventually, randomIp, startInstance, type Instance } from '../scale/instances.js';

/**
 * `kill -9` of the service process in the middle of a stream of writes (README,
 * "Operations under failure"), on both databases. After a restart, every write that
 * was acknowledged (a 200 without errors, received before the kill) is there, and no
 * write is half-applied: `deleteUser` removes a user with all their posts and
 * reactions or nothing at all, and a refresh-token rotation marks the presented token
 * rotated together with storing its successor, or does neither.
 */
// Enough that the delete stream never runs dry before both kills, however fast the machine.
const VICTIMS = 600;
const POSTS_EACH = 12;
const env = (backend: ProcessBackend) => ({ ...backend.env, SEED_DEMO_DATA: 'auto', PUBLIC_URL: 'http://127.0.0.1:8080' });

let backend: ProcessBackend;
let instance: Instance | undefined;
const victims: string[] = [];

beforeAll(async () => {
  backend = await processBackend();
  // Migrate and seed, then add the users to delete, each with posts and reactions:
  // their own on their posts, Alice's on their posts, and theirs on a demo post.
  const seeding = await startInstance('seed', env(backend));
  expect(await seeding.stop()).toBe(0);
  const [alice] = await backend.rows<{ id: string }>("select id from users where email = 'alice@inkwell.test'");
  const [demoPost] = await backend.rows<{ id: string }>('select id from posts order by created_at limit 1');
  const now = new Date().toISOString();
  const users: unknown[][] = [];
  const posts: unknown[][] = [];
  const reactions: unknown[][] = [];
  for (let v = 0; v < VICTIMS; v++) {
    const id = randomUUID();
    victims.push(id);
    users.push([id, `Victim ${v}`, `victim-${v}@example.test`, now]);
    for (let p = 0; p < POSTS_EACH; p++) {
      const post = randomUUID();
      posts.push([post, id, `victim ${v} post ${p}`, now, now]);
      reactions.push([randomUUID(), post, id, 'like', now], [randomUUID(), post, alice!.id, 'wow', now]);
    }
    reactions.push([randomUUID(), demoPost!.id, id, 'like', now]);
  }
  await insert('users (id, name, email, role, created_at)', "(?, ?, ?, 'user', ?)", users);
  await insert('posts (id, author_id, title, published, created_at, updated_at)', '(?, ?, ?, 1, ?, ?)', posts);
  await insert('reactions (id, post_id, user_id, type, created_at)', '(?, ?, ?, ?, ?)', reactions);
});

afterAll(async () => {
  if (instance && instance.child.exitCode === null) await instance.stop();
  await backend?.drop();
});

async function insert(into: string, tuple: string, rows: unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000) {
    const batch = rows.slice(i, i + 1000);
    await backend.rows(`insert into ${into} values ${batch.map(() => tuple).join(', ')}`, batch.flat());
  }
}

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

function refreshCookie(res: Response): string | undefined {
  for (const raw of res.headers.getSetCookie()) {
    const match = /^refresh-token=([^;]*)/.exec(raw);
    if (match?.[1]) return match[1];
  }
  return undefined;
}

/**
 * fetch, sent again while the answer is 503 `OVERLOADED`: the instance shed it before any
 * work (a loaded machine lags its event loop), so sending the same request again is no
 * replay, not even of a refresh token. It waits the `Retry-After` it is given.
 */
async function served(url: string, init: RequestInit): Promise<Response> {
  for (;;) {
    const res = await fetch(url, init);
    if (res.status !== 503) return res;
    const body = (await res.clone().json().catch(() => ({}))) as { code?: string };
    if (body.code !== 'OVERLOADED') return res;
    await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 1000));
  }
}

/** What one round wrote and had acknowledged before its kill. */
interface Round {
  deleted: string[];
  books: string[];
  /** Per session, every refresh token it was given, in order. */
  chains: string[][];
}

/** Starts an instance, runs the write streams on it and kills it (-9) in their midst. */
async function crashRound(name: string, toDelete: string[]): Promise<Round> {
  const running = await startInstance(name, env(backend));
  instance = running;
  const login = await served(`${running.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'admin@inkwell.test', password: 'inkwell-demo' }),
  });
  expect(login.status).toBe(200);
  const admin = { authorization: `Bearer ${((await login.json()) as { accessToken: string }).accessToken}` };

  // Sessions whose refresh tokens rotate in a loop; each keeps every token it was given.
  const chains: string[][] = [];
  for (const email of ['alice@inkwell.test', 'bob@inkwell.test', 'carol@inkwell.test', 'dave@inkwell.test']) {
    const res = await served(`${running.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': randomIp() },
      body: JSON.stringify({ email, password: 'inkwell-demo' }),
    });
    expect(res.status).toBe(200);
    chains.push([refreshCookie(res)!]);
  }
  let rotating = true;
  const rotationEnds: string[] = [];
  const rotations = chains.map(async (chain) => {
    while (rotating) {
      const res = await served(`${running.url}/api/auth/refresh`, {
        method: 'POST',
        headers: { cookie: `refresh-token=${chain.at(-1)!}`, 'x-forwarded-for': randomIp() },
      }).catch(() => undefined);
      // Stop at the first failure: presenting the token again would be a replay.
      if (res?.status !== 200) return void rotationEnds.push(res ? `${res.status} ${await res.text()}` : 'no answer');
      const next = refreshCookie(res);
      if (!next) return void rotationEnds.push('200 without a cookie');
      chain.push(next);
    }
  });

  // Users deleted, and books written, by several clients at once.
  const deletes = startLoad({
    clients: 4,
    target: () => running.url,
    operation: () => ({ query: 'mutation ($id: ID!) { deleteUser(id: $id) }', variables: { id: toDelete.shift() ?? victims[0] }, headers: admin }),
    // A victim whose deletion was shed before any work is still there to delete.
    onOutcome: (o) => void (o.status === 503 && o.body?.errors?.[0]?.extensions?.code === 'OVERLOADED' && toDelete.unshift(o.variables!['id'] as string)),
  });
  const books = startLoad({
    clients: 3,
    target: () => running.url,
    operation: (client, n) => ({ query: 'mutation ($t: String!) { addBook(title: $t, author: "Crash") { id } }', variables: { t: `${name} ${client}.${n}` }, headers: admin }),
  });

  const deleted = () => deletes.outcomes.filter((o) => o.status === 200 && o.body?.data?.deleteUser === true);
  const acknowledgedBooks = () => books.outcomes.filter((o) => o.status === 200 && !o.body?.errors && o.body?.data?.addBook?.id);
  // On a timeout, say which stream fell short and what it was answered.
  const progress = () => {
    const answers = (outcomes: typeof deletes.outcomes) => [...new Set(outcomes.map((o) => o.error ?? `${o.status} ${o.body?.errors?.[0]?.extensions?.code ?? ''}`.trim()))].join(', ');
    return `deleted ${deleted().length} (${answers(deletes.outcomes)}), books ${acknowledgedBooks().length} (${answers(books.outcomes)}), refresh chains ${chains.map((c) => c.length).join('/')}: ${rotationEnds.join(', ') || 'all rotating'}`;
  };
  await eventually(() => deleted().length >= 8 && acknowledgedBooks().length >= 20 && chains.every((c) => c.length >= 4), 60_000, 'writes before the kill', progress);
  // At a moment unrelated to any one answer.
  await new Promise((r) => setTimeout(r, Math.random() * 200));
  running.child.kill('SIGKILL');
  await new Promise<void>((resolve) => (running.child.exitCode !== null || running.child.signalCode !== null ? resolve() : running.child.once('exit', () => resolve())));
  rotating = false;
  await Promise.all([deletes.stop(), books.stop(), ...rotations]);
  expect(toDelete.length, 'still deleting when killed').toBeGreaterThan(0);
  return {
    deleted: deleted().map((o) => o.variables!['id'] as string),
    books: acknowledgedBooks().map((o) => o.body.data.addBook.id as string),
    chains,
  };
}

it('kill -9 during writes: every acknowledged write survives a restart, none is half-applied', async () => {
  // Two crashes, for more chances to hit a transaction half-way.
  const toDelete = [...victims];
  const rounds = [await crashRound('crash-1', toDelete), await crashRound('crash-2', toDelete)];
  const deletedIds = new Set(rounds.flatMap((r) => r.deleted));
  const bookIds = rounds.flatMap((r) => r.books);
  const chains = rounds.flatMap((r) => r.chains);
  const attempted = VICTIMS - toDelete.length;

  // Restart on the same database (SQLite recovers its write-ahead log on opening).
  instance = await startInstance('restarted', env(backend));

  // Every acknowledged book is there.
  const storedBooks = new Set((await backend.rows<{ id: string }>("select id from books where author = 'Crash'")).map((r) => r.id));
  expect(bookIds.filter((id) => !storedBooks.has(id))).toEqual([]);

  // Each user is either wholly there or wholly gone; acknowledged deletions are gone.
  // One statement per kind of row, counted per user (a connection per user and kind took
  // most of the test's time on PostgreSQL).
  const counts = async (sql: string) => new Map((await backend.rows<{ id: string; n: number }>(sql)).map((r) => [r.id, Number(r.n)]));
  const [users, posts, reactionsBy, reactionsOn] = await Promise.all([
    counts('select id, count(*) as n from users group by id'),
    counts('select author_id as id, count(*) as n from posts group by author_id'),
    counts('select user_id as id, count(*) as n from reactions group by user_id'),
    counts('select p.author_id as id, count(*) as n from reactions r join posts p on p.id = r.post_id group by p.author_id'),
  ]);
  const halfApplied: string[] = [];
  let gone = 0;
  for (const id of victims) {
    const state = {
      user: users.get(id) ?? 0,
      posts: posts.get(id) ?? 0,
      reactionsBy: reactionsBy.get(id) ?? 0,
      reactionsOn: reactionsOn.get(id) ?? 0,
    };
    const whole = { user: 1, posts: POSTS_EACH, reactionsBy: POSTS_EACH + 1, reactionsOn: 2 * POSTS_EACH };
    const none = { user: 0, posts: 0, reactionsBy: 0, reactionsOn: 0 };
    if (state.user === 0) gone++;
    if (deletedIds.has(id) ? !equal(state, none) : !equal(state, whole) && !equal(state, none)) halfApplied.push(`${id} ${JSON.stringify(state)}`);
  }
  expect(halfApplied).toEqual([]);
  // Deleted: the acknowledged ones, plus perhaps some whose answer was lost in a kill.
  expect(gone).toBeGreaterThanOrEqual(deletedIds.size);
  expect(gone).toBeLessThanOrEqual(attempted);

  // Refresh tokens: every token handed out is stored; every rotated token has its
  // successor (issued in the same transaction, at the same instant) and no session has
  // more than one live token.
  const tokens = await backend.rows<{ token_hash: string; session_id: string; created_at: string; rotated_at: string | null }>(
    'select token_hash, session_id, created_at, rotated_at from refresh_tokens',
  );
  const byHash = new Map(tokens.map((t) => [t.token_hash, t]));
  for (const chain of chains) {
    for (const token of chain) expect(byHash.has(sha256(token)), 'an acknowledged refresh token is stored').toBe(true);
    // All but the last were rotated (their successors were acknowledged).
    for (const token of chain.slice(0, -1)) expect(byHash.get(sha256(token))!.rotated_at).not.toBeNull();
  }
  const sessions = new Set(chains.map((chain) => byHash.get(sha256(chain[0]!))!.session_id));
  for (const session of sessions) {
    const family = tokens.filter((t) => t.session_id === session);
    const created = new Set(family.map((t) => t.created_at));
    const orphans = family.filter((t) => t.rotated_at !== null && !created.has(t.rotated_at));
    expect(orphans, 'a rotated token without its successor').toEqual([]);
    expect(family.filter((t) => t.rotated_at === null)).toHaveLength(1);
  }

  // And through the restarted service: the newest acknowledged token of each session
  // still refreshes, unless a rotation whose answer was lost in the kill had committed
  // (then its successor is stored, as checked above).
  let refreshed = 0;
  for (const chain of chains) {
    const last = byHash.get(sha256(chain.at(-1)!))!;
    if (last.rotated_at !== null) continue;
    const res = await served(`${instance.url}/api/auth/refresh`, { method: 'POST', headers: { cookie: `refresh-token=${chain.at(-1)!}` } });
    expect(res.status).toBe(200);
    refreshed++;
  }
  if (process.env.TEST_LOG_LEVEL) {
    console.log({ books: bookIds.length, deleted: deletedIds.size, gone, rotations: chains.map((c) => c.length - 1), refreshed });
  }
}, 150_000);

function equal(a: object, b: object): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
