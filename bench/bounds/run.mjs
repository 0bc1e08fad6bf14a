/**
 * `node bench/bounds/run.mjs` (after `npm run build`): the hostile clients of issue 18,
 * each against a production-mode instance with its default bounds (docs/limits.md), and
 * what the service did: memory growth, refusals, a legitimate caller's latency.
 * Prints a markdown table and writes it to bench/results/bounds.md.
 *
 * Every address in 127.0.0.0/8 is loopback, so one process is many clients.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import SQLite from 'better-sqlite3';
import WebSocket from 'ws';
import { installCleanup } from '../lib/children.mjs';
import { createBenchDatabase } from '../lib/seed.mjs';
import { startService } from '../lib/service.mjs';

const METRICS_TOKEN = 'bounds-bench-metrics-token-0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);

/** One HTTP request from `localAddress`; resolves with status, headers and body text. */
function request(url, { method = 'POST', body, headers = {}, localAddress = '127.0.0.1', timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { 'content-type': 'application/json', ...headers }, localAddress, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

async function metrics(service) {
  const res = await request(`${service.url}/metrics`, { method: 'GET', headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const value = (name, labels = '') => {
    const line = res.text.split('\n').find((l) => l.startsWith(`${name}${labels}`) && !l.startsWith('#'));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
  };
  return {
    rss: value('process_resident_memory_bytes'),
    heap: value('nodejs_heap_size_used_bytes'),
    heavyExecuted: value('inkwell_graphql_heavy_executions_total'),
    heavyGone: value('inkwell_graphql_heavy_refusals_total', '{reason="gone"}'),
    heavyFull: value('inkwell_graphql_heavy_refusals_total', '{reason="full"}'),
    heavyTimeout: value('inkwell_graphql_heavy_refusals_total', '{reason="timeout"}'),
  };
}

const gql = (query, extensions) => JSON.stringify(extensions ? { query, extensions } : { query });

async function persistedFlood(service) {
  const before = await metrics(service);
  let stored = 0;
  for (const [n, address] of [[95, '127.0.0.2'], [95, '127.0.0.3']]) {
    for (let i = 0; i < n; i++) {
      const query = `{ __typename } # ${address} ${i} ${'x'.repeat(1_000_000)}`;
      const sha256Hash = createHash('sha256').update(query).digest('hex');
      const res = await request(service.graphqlUrl, { body: gql(query, { persistedQuery: { version: 1, sha256Hash } }), localAddress: address });
      if (res.status === 200) stored++;
    }
  }
  await sleep(1000);
  const after = await metrics(service);
  return { attack: '190 persisted queries of ~1 MB from two addresses', result: `${stored} answered 200; heap ${mb(before.heap)} → ${mb(after.heap)} MB, RSS ${mb(before.rss)} → ${mb(after.rss)} MB` };
}

async function throttleEviction(service) {
  const email = `victim-${Date.now()}@inkwell.test`;
  await request(`${service.url}/api/auth/register`, { body: JSON.stringify({ email, password: 'correct horse battery' }) });
  const wrong = () => request(`${service.url}/api/auth/login`, { body: JSON.stringify({ email, password: 'wrong password!' }), localAddress: '127.0.0.9' });
  const statuses = [];
  for (let i = 0; i < 11; i++) statuses.push((await wrong()).status);
  let distinct = 0;
  for (let a = 0; a < 6; a++) {
    for (let i = 0; i < 90; i++) {
      const res = await request(service.graphqlUrl, { body: gql(`{ a${a}_${i}: __typename }`), localAddress: `127.0.1.${a + 1}` });
      if (res.status === 200) distinct++;
    }
  }
  const next = await wrong();
  return {
    attack: '11 wrong passwords, then 540 distinct anonymous queries from 6 addresses, then a wrong password',
    result: `11th attempt ${statuses[10]}; ${distinct} queries answered; the next wrong password: ${next.status} (Retry-After ${next.headers['retry-after'] ?? '–'} s)`,
  };
}

async function abandonedHeavy(service) {
  // Each one a distinct document, so none is answered from the response cache.
  const heavyQuery = (n) => gql(`{ users(limit: 50) { name posts(limit: 10) { title content } } n${n}: __typename }`);
  const heavy = heavyQuery('alone');
  const alone = Date.now();
  await request(service.graphqlUrl, { body: heavy, localAddress: '127.0.2.9' });
  const aloneMs = Date.now() - alone;
  const before = await metrics(service);
  const sockets = [];
  for (const address of ['127.0.2.1', '127.0.2.2']) {
    for (let i = 0; i < 90; i++) {
      const socket = net.connect({ host: '127.0.0.1', port: service.port, localAddress: address });
      const body = heavyQuery(`${address.replaceAll('.', '_')}_${i}`);
      socket.on('error', () => {});
      socket.on('connect', () =>
        socket.write(`POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
      );
      sockets.push(socket);
    }
  }
  setTimeout(() => sockets.forEach((s) => s.destroy()), 300);
  await sleep(100);
  const started = Date.now();
  const legit = await request(service.graphqlUrl, { body: heavyQuery('legit'), localAddress: '127.0.2.9' });
  const legitMs = Date.now() - started;
  await sleep(3000);
  const after = await metrics(service);
  return {
    attack: '180 heavy queries from 2 addresses, sockets closed after 300 ms',
    result: `executed ${after.heavyExecuted - before.heavyExecuted - 1} of 180; dropped (client gone) ${after.heavyGone - before.heavyGone}, refused full ${after.heavyFull - before.heavyFull}, timed out ${after.heavyTimeout - before.heavyTimeout}; a legitimate heavy query: ${legit.status} in ${legitMs} ms (alone: ${aloneMs} ms)`,
  };
}

async function webSocketFlood(service) {
  const before = await metrics(service);
  let open = 0;
  let refused = 0;
  const statuses = {};
  const sockets = [];
  const subscribe = (ws) =>
    new Promise((resolve) => {
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'connection_ack') return;
        for (let i = 0; i < 100; i++) ws.send(JSON.stringify({ id: String(i), type: 'subscribe', payload: { query: 'subscription { userCreated { id name } }' } }));
        resolve();
      });
      ws.send(JSON.stringify({ type: 'connection_init' }));
    });
  for (let i = 0; i < 400; i++) {
    const ws = new WebSocket(`ws://127.0.0.1:${service.port}/graphql`, 'graphql-transport-ws', { localAddress: '127.0.3.1' });
    const outcome = await new Promise((resolve) => {
      ws.once('open', () => resolve('open'));
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode));
      ws.once('error', () => resolve('error'));
    });
    if (outcome === 'open') {
      open++;
      sockets.push(ws);
      await subscribe(ws);
    } else {
      refused++;
      statuses[outcome] = (statuses[outcome] ?? 0) + 1;
    }
  }
  await sleep(1000);
  const after = await metrics(service);
  for (const ws of sockets) ws.terminate();
  return {
    attack: '400 anonymous WebSocket connections from one address, 100 subscriptions each',
    result: `${open} open, ${refused} refused (${Object.entries(statuses).map(([s, n]) => `${n} × ${s}`).join(', ')}); heap ${mb(before.heap)} → ${mb(after.heap)} MB`,
  };
}

async function slowReaders(service, dbFile) {
  // 100 posts of 50 KB: `{ posts(limit: 100) { content } }` answers ~5 MB.
  const db = new SQLite(dbFile);
  db.prepare(`update posts set content = ? where id in (select id from posts order by created_at desc limit 100)`).run('y'.repeat(50_000));
  db.close();
  const before = await metrics(service);
  const body = gql('{ posts(limit: 100) { content } }');
  const sockets = [];
  for (let i = 0; i < 60; i++) {
    const socket = net.connect({ host: '127.0.0.1', port: service.port, localAddress: '127.0.4.1' });
    socket.on('error', () => {});
    await once(socket, 'connect');
    socket.pause();
    socket.write(`POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    sockets.push(socket);
  }
  await sleep(5000);
  const held = await metrics(service);
  await sleep(35_000);
  const later = await metrics(service);
  const closed = sockets.filter((s) => s.destroyed || s.readableEnded || s.closed).length;
  sockets.forEach((s) => s.destroy());
  return {
    attack: '60 connections asking for ~5 MB responses and never reading',
    result: `RSS ${mb(before.rss)} → ${mb(held.rss)} MB after 5 s → ${mb(later.rss)} MB after 40 s; ${closed} of 60 connections closed by the server`,
  };
}

async function duplicateHost(service) {
  const socket = net.connect({ host: '127.0.0.1', port: service.port });
  await once(socket, 'connect');
  socket.write('GET /graphql?query=%7B__typename%7D HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n');
  const [chunk] = await once(socket, 'data');
  socket.destroy();
  return { attack: 'two `Host` headers', result: String(chunk).split('\r\n', 1)[0] };
}

async function credentialedGet(service) {
  const email = `reader-${Date.now()}@inkwell.test`;
  const password = 'correct horse battery';
  await request(`${service.url}/api/auth/register`, { body: JSON.stringify({ email, password }) });
  const login = JSON.parse((await request(`${service.url}/api/auth/login`, { body: JSON.stringify({ email, password }) })).text);
  const res = await request(`${service.graphqlUrl}?query=${encodeURIComponent('{ me { email } }')}`, { method: 'GET', headers: { authorization: `Bearer ${login.accessToken}` } });
  return { attack: '`GET /graphql?query={me{email}}` with a credential', result: `${res.status}, Cache-Control: ${res.headers['cache-control'] ?? '(none)'}` };
}

async function main() {
  installCleanup();
  const db = await createBenchDatabase({ users: 100, postsPerUser: 10 });
  const env = { METRICS_TOKEN, RATE_LIMIT_MAX: '100', QUERY_MAX_COMPLEXITY: '1000', WS_MAX_CONNECTIONS_PER_CLIENT: '100' };
  const rows = [];
  const only = process.argv.slice(2);
  try {
    for (const attack of [persistedFlood, throttleEviction, abandonedHeavy, webSocketFlood, slowReaders, duplicateHost, credentialedGet]) {
      if (only.length > 0 && !only.includes(attack.name)) continue;
      // A fresh instance per attack: each starts from the same memory.
      const service = await startService({ dbFile: db.dbFile, env });
      try {
        process.stderr.write(`${attack.name}…\n`);
        rows.push(await attack(service, db.dbFile));
      } finally {
        await service.stop();
      }
    }
  } finally {
    db.remove();
  }
  const table = ['| what one client did | what happened |', '|---|---|', ...rows.map((r) => `| ${r.attack} | ${r.result} |`)].join('\n');
  const text = `# Bounds under hostile clients (\`node bench/bounds/run.mjs\`, ${new Date().toISOString().slice(0, 10)}, Node ${process.versions.node})\n\n${table}\n`;
  mkdirSync(new URL('../results/', import.meta.url), { recursive: true });
  if (only.length === 0) writeFileSync(new URL('../results/bounds.md', import.meta.url), text);
  console.log(text);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
