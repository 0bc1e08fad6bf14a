/**
 * The soak (issue 13): mixed realistic traffic (bench/mixed/traffic.mjs) for ten minutes
 * against one Inkwell, with 2,000 WebSocket subscribers receiving events all along, on
 * SQLite and on PostgreSQL + Redis. Per minute: req/s, p50/p99, faults, events, and the
 * service's RSS, heap after GC and open handles, read over the inspector protocol
 * (inspector.mjs). Checks and table: report.mjs; results in bench/results/soak.md.
 *
 *   npm run soak                                  # builds, then this
 *   SOAK_DB=sqlite|postgres|both SOAK_MINUTES=10 SOAK_SUBSCRIBERS=2000 (defaults: both, 10, 2000)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { forkTracked, installCleanup, stopChild, waitForMessage } from '../lib/children.mjs';
import { cpuMsOf, waitForQuiet } from '../lib/cpu.mjs';
import { freePort, startService } from '../lib/service.mjs';
import { signIn } from '../mixed/accounts.mjs';
import { runTraffic } from '../mixed/traffic.mjs';
import { missingServers } from '../postgres/servers.mjs';
import { prepareBackend } from './backends.mjs';
import { connectInspector } from './inspector.mjs';
import { formatRun, judge } from './report.mjs';

const SUBSCRIBERS_SCRIPT = fileURLToPath(new URL('./subscribers.mjs', import.meta.url));
const RESULTS = fileURLToPath(new URL('../results/soak.md', import.meta.url));

const env = process.env;
const PARAMS = {
  minutes: Number(env.SOAK_MINUTES ?? 10),
  subscribers: Number(env.SOAK_SUBSCRIBERS ?? 2000),
  /** Seconds per "minute": shorter only to try the script out. */
  minuteSeconds: Number(env.SOAK_MINUTE_SECONDS ?? 60),
  writePercent: Number(env.SOAK_WRITES ?? 2),
  /** The posts the writes go to; the reaction subscribers are spread over them. */
  hotPosts: Number(env.SOAK_HOT_POSTS ?? 100),
  signedIn: 0.4,
  accounts: 40,
  connections: Number(env.BENCH_CONNECTIONS ?? 50),
  /** A sign-up every so often, so userCreated subscribers get events too. */
  registerMs: Number(env.SOAK_REGISTER_MS ?? 5000),
  /** Shares of the subscribers: userCreated rather than postReactionAdded; signed in. */
  userShare: 0.1,
  signedInShare: 0.25,
  /** The minute the last one is compared with (heap, RSS, p99). */
  baseMinute: Number(env.SOAK_BASE_MINUTE ?? 2),
};
PARAMS.sampleAt = Math.max(1, PARAMS.minuteSeconds - 10);
const DBS = { sqlite: ['sqlite'], postgres: ['postgres'], both: ['sqlite', 'postgres'] }[env.SOAK_DB ?? 'both'];
/** Access tokens live 15 minutes; one minute of traffic must end before they do. */
const TOKEN_REFRESH_MS = 12 * 60 * 1000;
const PASSWORD = 'soak sign-up password';

export async function runSoak() {
  if (!DBS) throw new Error(`SOAK_DB must be sqlite, postgres or both, not ${env.SOAK_DB}`);
  const sections = [];
  const runs = [];
  for (const name of DBS) {
    if (name === 'postgres' && missingServers()) {
      sections.push(`### PostgreSQL + Redis — skipped\n\n${missingServers()}`);
      continue;
    }
    const run = await soakOne(name);
    runs.push(run);
    sections.push(formatRun(run));
  }
  const markdown = [
    `## Soak (${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC)`,
    '',
    'One Inkwell (production mode, LOG_LEVEL=warn) per database. Written by `npm run soak` (bench/soak/).',
    '',
    sections.join('\n\n'),
    '',
  ].join('\n');
  mkdirSync(fileURLToPath(new URL('../results/', import.meta.url)), { recursive: true });
  writeFileSync(RESULTS, markdown);
  return { markdown, pass: runs.every((r) => judge(r).pass) };
}

async function soakOne(name) {
  const cleanups = [];
  let service;
  let inspector;
  let subscribers;
  let store;
  try {
    log(name, 'preparing the data');
    const backend = await prepareBackend(name, { accounts: PARAMS.accounts, cleanups });
    const inspectPort = await freePort();
    // Every subscriber connects from this one address: no per-client connection cap (docs/limits.md).
    const soakEnv = { ...backend.env, WS_MAX_CONNECTIONS_PER_CLIENT: '0' };
    service = await startService({ dbFile: backend.dbFile, env: soakEnv, nodeArgs: [`--inspect=127.0.0.1:${inspectPort}`] });
    inspector = await connectInspector(inspectPort);
    store = await backend.openStore();

    const tokens = freshTokens(service, backend.accounts);
    const pool = await tokens.current();
    const barrierToken = await signUp(service.url, 'Soak reactor', 'soak-reactor');
    const hot = spread(backend.data.postIds, PARAMS.hotPosts);
    const plan = subscriptionPlan(hot, pool);

    subscribers = forkTracked(SUBSCRIBERS_SCRIPT);
    await waitForMessage(subscribers, (m) => m.cmd === 'ready');
    log(name, `opening ${plan.length} subscriptions`);
    subscribers.send({ cmd: 'connect', url: `${service.url.replace(/^http/, 'ws')}/graphql`, plan });
    const connected = check(await waitForMessage(subscribers, (m) => m.cmd === 'connect', 600_000));
    await barrier({ service, subscribers, token: barrierToken, name });
    const setup = {
      connectMs: connected.ms,
      reactionSubscribers: plan.filter((p) => p.kind === 'reaction').length,
      userSubscribers: plan.filter((p) => p.kind === 'user').length,
      signedIn: plan.filter((p) => p.token).length,
      memory: await inspector.sample(),
    };
    const perPost = new Map();
    for (const p of plan) if (p.kind === 'reaction') perPost.set(p.postId, (perPost.get(p.postId) ?? 0) + 1);
    const due = ({ reactions, users }) => {
      let n = users * setup.userSubscribers;
      for (const [postId, count] of reactions) n += count * (perPost.get(postId) ?? 0);
      return n;
    };

    await waitForQuiet({ log: (m) => log(name, m) });
    await sample(subscribers); // barrier events arriving late are not counted anyway; start from zero
    const start = new Date().toISOString();
    const registrations = registerLoop(service.url);
    const data = { userIds: backend.data.userIds, postIds: [...backend.data.draftIds, ...backend.data.postIds], writablePostIds: hot };
    const minutes = [];
    let from = start;
    try {
      for (let minute = 1; minute <= PARAMS.minutes; minute++) {
        const began = Date.now();
        const subscribersCpuAtStart = cpuMsOf(subscribers.pid);
        const memory = delay(PARAMS.sampleAt * 1000).then(() => inspector.sample());
        memory.catch(() => {}); // awaited below
        const traffic = await runTraffic({
          url: service.graphqlUrl,
          data,
          tokens: await tokens.current(),
          writeShare: PARAMS.writePercent / 100,
          signedInShare: PARAMS.signedIn,
          connections: PARAMS.connections,
          duration: PARAMS.minuteSeconds,
          warmup: 0,
          serverPid: service.child.pid,
        });
        const to = new Date().toISOString();
        const ws = await sample(subscribers);
        const stored = await store.between(from, to);
        from = to;
        const wallMs = Date.now() - began;
        const row = {
          minute,
          wallMs,
          subscribersCpu: (cpuMsOf(subscribers.pid) - subscribersCpuAtStart) / wallMs,
          traffic,
          ws,
          published: { reactions: sum(stored.reactions.values()), users: stored.users, due: due(stored) },
          registrations: registrations.take(),
          memory: await memory,
        };
        minutes.push(row);
        log(
          name,
          `minute ${minute}/${PARAMS.minutes}: ${Math.round(traffic.rps)} req/s, p99 ${traffic.p99} ms, ` +
            `${traffic.non2xx + traffic.errors + traffic.timeouts} HTTP faults, ${ws.received}/${row.published.due} events, ${ws.errors} WS faults, ` +
            `RSS ${mb(row.memory.rss)} MB, heap ${mb(row.memory.heapUsed)} MB, ${row.memory.handles} handles`,
        );
      }
    } finally {
      await registrations.stop();
    }
    await delay(3_000); // events still on their way
    const drain = await sample(subscribers);
    const end = new Date().toISOString();
    const stored = await store.between(start, end);
    const totals = {
      reactions: sum(stored.reactions.values()),
      users: stored.users,
      due: due(stored),
      received: sum(minutes.map((m) => m.ws.received)) + drain.received,
    };
    return { name, label: backend.label, params: { ...PARAMS }, setup, minutes, drain, totals };
  } finally {
    if (subscribers) {
      subscribers.send({ cmd: 'close' });
      await waitForMessage(subscribers, (m) => m.cmd === 'close', 20_000).catch(() => {});
      await stopChild(subscribers, 2_000);
    }
    inspector?.close();
    await store?.close();
    await service?.stop();
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

/** `count` post ids evenly spread over the list. */
function spread(postIds, count) {
  const step = postIds.length / count;
  return Array.from({ length: Math.min(count, postIds.length) }, (_, i) => postIds[Math.floor(i * step)]);
}

/** Who subscribes to what: userCreated for a share, postReactionAdded round-robin over the hot posts; a share signed in. */
function subscriptionPlan(hot, tokens) {
  const users = Math.round(PARAMS.subscribers * PARAMS.userShare);
  const signedInEvery = Math.round(1 / PARAMS.signedInShare);
  return Array.from({ length: PARAMS.subscribers }, (_, i) => ({
    kind: i < users ? 'user' : 'reaction',
    ...(i < users ? {} : { postId: hot[(i - users) % hot.length] }),
    ...(i % signedInEvery === 0 ? { token: tokens[i % tokens.length] } : {}),
  }));
}

/**
 * Proves every subscription live before the clock starts (no protocol message says a
 * subscription is): a reaction of a fresh user ("barrier…" types, not counted as soak
 * events) on every post with a subscriber still waiting, and a sign-up when a
 * userCreated subscriber waits, until each has had one event.
 */
async function barrier({ service, subscribers, token, name }) {
  for (let round = 0; round < 20; round++) {
    subscribers.send({ cmd: 'pending' });
    const waiting = check(await waitForMessage(subscribers, (m) => m.cmd === 'pending'));
    if (waiting.posts.length === 0 && !waiting.user) return log(name, `every subscription live after ${round} barrier round(s)`);
    for (const postId of waiting.posts) await addReaction(service.graphqlUrl, token, postId, `barrier${round}`);
    if (waiting.user) await register(service.url, `Soak barrier ${round}`, `soak-barrier-${round}`);
    await delay(1_000);
  }
  throw new Error('some subscriptions got no event after 20 barrier rounds');
}

/** Sign-ups every PARAMS.registerMs until stop(); take() returns and resets the counts. */
function registerLoop(baseUrl) {
  let counts = { ok: 0, failed: 0, firstProblem: undefined };
  let running = true;
  let n = 0;
  const loop = (async () => {
    while (running) {
      const next = Date.now() + PARAMS.registerMs;
      try {
        await register(baseUrl, `Soak user ${n}`, `soak-user-${n}`);
        counts.ok++;
      } catch (error) {
        counts.failed++;
        counts.firstProblem ??= String(error.message);
      }
      n++;
      while (running && Date.now() < next) await delay(Math.min(250, next - Date.now()));
    }
  })();
  return {
    take() {
      const taken = counts;
      counts = { ok: 0, failed: 0, firstProblem: undefined };
      return taken;
    },
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** The pool's tokens, signed in again (in the background) once they are 12 minutes old. */
function freshTokens(service, accounts) {
  let tokens = signIn(service.url, accounts);
  let at = Date.now();
  let refreshing;
  return {
    async current() {
      if (!refreshing && Date.now() - at > TOKEN_REFRESH_MS) {
        refreshing = signIn(service.url, accounts).then(
          (fresh) => {
            tokens = Promise.resolve(fresh);
            at = Date.now();
            refreshing = undefined;
          },
          (error) => {
            console.error(`[soak] signing the pool in again failed (tried again next minute): ${error.message}`);
            refreshing = undefined;
          },
        );
      }
      return tokens;
    },
  };
}

/** A new account (which publishes userCreated); returns its email. */
async function register(baseUrl, name, emailPrefix) {
  const email = `${emailPrefix}-${Date.now()}@soak.test`;
  const registered = await fetch(`${baseUrl}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name, email, password: PASSWORD }),
  });
  const text = await registered.text();
  if (registered.status !== 201) throw new Error(`sign-up: HTTP ${registered.status}: ${text.slice(0, 200)}`);
  return email;
}

/** A new account, signed in: its access token. */
async function signUp(baseUrl, name, emailPrefix) {
  const email = await register(baseUrl, name, emailPrefix);
  const login = await fetch(`${baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  const body = await login.json();
  if (login.status !== 200) throw new Error(`login after sign-up: HTTP ${login.status}: ${JSON.stringify(body).slice(0, 200)}`);
  return body.accessToken;
}

async function addReaction(graphqlUrl, token, postId, type) {
  const response = await fetch(graphqlUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'mutation($p: ID!, $t: String!) { addReaction(postId: $p, type: $t) { id } }', variables: { p: postId, t: type } }),
  });
  const body = await response.json();
  if (!response.ok || body.errors) throw new Error(`barrier reaction: HTTP ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
}

async function sample(subscribers) {
  subscribers.send({ cmd: 'sample' });
  const s = check(await waitForMessage(subscribers, (m) => m.cmd === 'sample'));
  return { ...s, received: s.events.reaction + s.events.user };
}

function check(message) {
  if (message.error) throw new Error(`subscribers: ${message.error}`);
  return message;
}

const sum = (values) => [...values].reduce((a, b) => a + b, 0);
const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const delay = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function log(name, message) {
  console.error(`[soak] ${name}: ${message}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  installCleanup();
  runSoak().then(
    ({ markdown }) => console.log(`\n${markdown}`),
    (error) => {
      console.error(`[soak] crashed: ${error?.stack ?? error}`);
      process.exit(1);
    },
  );
}
