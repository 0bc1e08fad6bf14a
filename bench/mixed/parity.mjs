/**
 * Before anything is measured, every implementation must answer alike: the reference,
 * each current Inkwell (response cache on and off) and, when BENCH_BASELINE is set, each
 * baseline Inkwell, each on its own copy of the same data. Every read shape of the mixes,
 * anonymous and signed in, on published posts, the caller's own draft and someone
 * else's (field rules included: email, drafts, `me`), with variables and with the ids
 * written into the document; refused credentials; and every write shape of the mixes
 * (addReaction, createPost, updatePost, updateUser, each answering `{ id }` and more),
 * where generated ids and creation times may differ, plus the permission and input
 * errors of those writes (the codes compared). Each write goes once to each copy, so
 * the copies stay alike.
 *
 * A current Inkwell that answers unlike the reference throws: a benchmark against a wrong
 * reference means nothing. A baseline that answers unlike the current build (an older
 * behaviour, a missing feature) is reported, not fatal: the caller puts it in the notes.
 */
import { isDeepStrictEqual } from 'node:util';
import { SignJWT } from 'jose';
import { mirrorSessions, revokeSession, signIn } from './accounts.mjs';
import { inlineVariables, requestBody, SHAPES, writeBody } from './mix.mjs';

async function askRaw(url, body, token) {
  const headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = { notJson: text.slice(0, 300) };
  }
  return { status: response.status, json, text };
}

/** A refused credential: 401 UNAUTHENTICATED with a Bearer challenge (docs/permissions.md). */
async function refused(url, body, token) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body });
  const text = await response.text();
  const code = response.status === 401 ? JSON.parse(text).errors?.[0]?.extensions?.code : undefined;
  if (code !== 'UNAUTHENTICATED' || !response.headers.get('www-authenticate')?.startsWith('Bearer')) {
    return `HTTP ${response.status} ${text.slice(0, 200)}, expected 401 UNAUTHENTICATED`;
  }
  return undefined;
}

/** Two servers give the same data (used by the nested scenario); returns both answers. */
export async function sameAnswer({ inkwell, reference, body, token, what }) {
  const [ours, theirs] = await Promise.all([askRaw(inkwell.graphqlUrl, body, token), askRaw(reference.graphqlUrl, body, token)]);
  for (const [who, r] of [['Inkwell', ours], ['reference', theirs]]) {
    if (r.status !== 200 || r.json.errors) throw new Error(`${what}: ${who} answered HTTP ${r.status} ${r.text.slice(0, 300)}`);
  }
  if (!isDeepStrictEqual(ours.json.data, theirs.json.data)) {
    throw new Error(`the reference answers ${what} differently:\n  Inkwell:   ${JSON.stringify(ours.json.data).slice(0, 400)}\n  reference: ${JSON.stringify(theirs.json.data).slice(0, 400)}`);
  }
  return [ours.json.data, theirs.json.data];
}

/** Field rules the mix does not reach: others' email, drafts in lists and counts. */
const RULES = [
  ['user with email and drafts', 'query ($id: ID!) { user(id: $id) { id email postsCount posts(limit: 3) { id published } } }'],
  ['posts with drafts and author emails', '{ posts(limit: 60) { id published author { id email } } }'],
  ['users with email', '{ users(limit: 5) { id email role } }'],
];

/** A copy of `data` with the values at `paths` ('createPost.id', 'a.b[].id') replaced: they are generated per copy. */
function blank(data, paths) {
  const copy = structuredClone(data);
  for (const path of paths) {
    const walk = (node, parts) => {
      if (node === null || node === undefined) return;
      const [head, ...rest] = parts;
      if (head.endsWith('[]')) {
        for (const item of node[head.slice(0, -2)] ?? []) walk(item, rest);
      } else if (rest.length === 0) {
        if (head in node) node[head] = '(generated)';
      } else walk(node[head], rest);
    };
    walk(copy, path.split('.'));
  }
  return copy;
}

/**
 * sides: [{ name, server, baseline? }] — the Inkwells (current first); reference: the
 * reference server. data: { postIds, writablePostIds, userIds, draftIds }; accounts[i]
 * holds tokens[i]; writers: tokenKeeper's (users and editors); targets: { inkwell (the
 * first side's database), all: every copy's database } (bench/mixed/accounts.mjs).
 * Resolves with { count, baselineDifferences: [text] }.
 */
export async function checkParity({ sides, reference, data, accounts, tokens, writers, targets }) {
  const servers = [reference, ...sides.map((s) => s.server)];
  const baselineDifferences = [];
  let count = 0;

  /** Sends one request to every server and compares each Inkwell's answer with the reference's. */
  async function compare(what, body, token, { generated = [], expectErrors = false } = {}) {
    count++;
    const answers = await Promise.all(servers.map((server) => askRaw(server.graphqlUrl, body, token)));
    const view = ({ status, json }) =>
      expectErrors
        ? { status, data: json.data, codes: (json.errors ?? []).map((e) => e.extensions?.code ?? e.message) }
        : { status, data: json.data === undefined ? json : blank(json.data, generated), errors: json.errors?.map((e) => e.message) };
    const [theirs, ...ours] = answers.map(view);
    if (!expectErrors && (theirs.status !== 200 || theirs.errors)) {
      throw new Error(`${what}: the reference answered HTTP ${theirs.status} ${answers[0].text.slice(0, 300)}`);
    }
    if (expectErrors && theirs.codes.length === 0) throw new Error(`${what}: the reference answered without an error: ${answers[0].text.slice(0, 300)}`);
    sides.forEach((side, i) => {
      if (isDeepStrictEqual(ours[i], theirs)) return;
      const message = `${what}: ${side.name} ${JSON.stringify(ours[i]).slice(0, 300)}, reference ${JSON.stringify(theirs).slice(0, 300)}`;
      if (!side.baseline) throw new Error(`the reference answers differently — ${message}`);
      baselineDifferences.push(message);
    });
    return answers.map((a) => a.json.data);
  }

  const [me, other] = [accounts[0], accounts[1]];
  const posts = [data.writablePostIds[0], data.draftIds[0], data.draftIds[1]];
  const users = [data.userIds[0], me.userId];
  for (const token of [undefined, tokens[0]]) {
    const who = token ? `signed in as ${me.email}` : 'anonymous';
    const cases = [];
    for (const id of posts) cases.push(['post', { id }], ['reactions', { id }]);
    for (const id of users) cases.push(['user', { id }]);
    cases.push(['posts', undefined], ['me', undefined]);
    for (const [shape, variables] of cases) {
      await compare(`${shape} ${JSON.stringify(variables ?? {})} (${who})`, requestBody(shape, variables), token);
      if (variables) {
        const literal = JSON.stringify({ query: inlineVariables(SHAPES[shape].query, variables) });
        await compare(`${shape} with the id in the document (${who})`, literal, token);
      }
    }
    for (const [what, query] of RULES) {
      for (const id of query.includes('$id') ? [me.userId, other.userId] : [undefined]) {
        await compare(`${what} ${id ?? ''} (${who})`, JSON.stringify(id ? { query, variables: { id } } : { query }), token);
      }
    }
  }

  // Credentials: a live session; the same session revoked and a token signed with another key are refused.
  const meBody = requestBody('me');
  const [fresh] = await signIn(sides[0].server.url, [accounts[2]]);
  for (const target of targets.all) if (target !== targets.inkwell) await mirrorSessions(targets.inkwell, target);
  const [live] = await compare('me with a fresh token', meBody, fresh);
  if (live.me?.id !== accounts[2].userId) throw new Error('me with a fresh token: not the signed-in user');
  const claims = JSON.parse(Buffer.from(fresh.split('.')[1], 'base64url').toString('utf8'));
  await revokeSession(targets.all, claims.sid);
  const forged = await new SignJWT({ role: claims.role, sid: claims.sid })
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .setSubject(claims.sub).setIssuer(claims.iss).setAudience(claims.aud).setIssuedAt().setExpirationTime('5m')
    .sign(new TextEncoder().encode('not-the-bench-secret-not-the-bench-secret'));
  for (const [what, token] of [['a revoked session', fresh], ['a forged token', forged]]) {
    const problems = await Promise.all(servers.map((server) => refused(server.graphqlUrl, meBody, token)));
    if (problems[0]) throw new Error(`me with ${what}: the reference answered ${problems[0]}`);
    sides.forEach((side, i) => {
      const problem = problems[i + 1];
      if (!problem) return;
      if (!side.baseline) throw new Error(`me with ${what}: ${side.name} answered ${problem}`);
      baselineDifferences.push(`me with ${what}: ${side.name} answered ${problem}`);
    });
  }

  // The standard mix's addReaction: the same reaction on each copy, then a repeat, which returns the stored one.
  const like = requestBody('addReaction', { postId: data.writablePostIds[1], type: 'like' });
  const first = await compare('addReaction (standard)', like, tokens[1], { generated: ['addReaction.id'] });
  const again = await compare('addReaction repeated', like, tokens[1], { generated: ['addReaction.id'] });
  first.forEach((answer, i) => {
    if (!isDeepStrictEqual(answer, again[i])) throw new Error(`${i === 0 ? 'the reference' : sides[i - 1].name}: a repeated addReaction did not return the stored one`);
  });
  if (first[0].addReaction.post.likes !== 1) throw new Error(`addReaction: likes ${first[0].addReaction.post.likes}, expected 1`);

  // Every write shape of the `writes` mixes, with variables and literal, `{ id }` and rich.
  const editor = writers.editors[0];
  const user = writers.users[3];
  const writes = [
    ['addReaction', { postId: data.writablePostIds[2], type: 'insightful' }, user.token, ['addReaction.id', 'addReaction.createdAt']],
    ['addReaction', { postId: data.writablePostIds[2], type: 'fire' }, user.token, ['addReaction.id', 'addReaction.createdAt']],
    ['createPost', { title: 'Parity post', content: 'Body', authorId: editor.id, tags: ['bench', 'parity'], published: true }, editor.token, ['createPost.id', 'createPost.createdAt']],
    ['createPost', { title: 'Parity draft', authorId: editor.id, published: false }, editor.token, ['createPost.id', 'createPost.createdAt']],
    ['updatePost', { id: editor.postIds[0], title: 'Parity title' }, editor.token, []],
    ['updatePost', { id: editor.postIds[1], content: 'Parity content', tags: ['x'] }, editor.token, []],
    ['updatePost', { id: editor.postIds[2], content: null, tags: null }, editor.token, []],
    ['updateUser', { id: user.id, name: 'Parity Name', age: 33 }, user.token, []],
    ['updateUser', { id: user.id, avatar: 'https://avatars.inkwell.test/p.png' }, user.token, []],
  ];
  for (const [kind, variables, token, generated] of writes) {
    for (const selection of ['id', 'rich']) {
      for (const literal of [false, true]) {
        // A second createPost/addReaction is another row (or the stored reaction): compare without generated values.
        await compare(`${kind} ${selection}${literal ? ' literal' : ''} ${JSON.stringify(variables)}`, writeBody(kind, selection, variables, literal), token, { generated });
      }
    }
  }
  // The front page and the editor's profile after those writes (new posts have per-copy ids).
  await compare('posts after the writes', requestBody('posts'), undefined, { generated: ['posts[].id', 'posts[].createdAt'] });
  await compare('the editor after the writes', requestBody('user', { id: editor.id }), editor.token, { generated: ['user.posts[].id', 'user.posts[].createdAt'] });

  // Who may write what (docs/permissions.md) and the input rules: the same error codes.
  const someoneElsesPost = data.writablePostIds[0];
  const denied = [
    ['createPost by a user', writeBody('createPost', 'id', { title: 't', authorId: me.userId }), tokens[0]],
    ['createPost as another author', writeBody('createPost', 'id', { title: 't', authorId: me.userId }), editor.token],
    ['createPost with an empty title', writeBody('createPost', 'id', { title: '', authorId: editor.id }), editor.token],
    ['createPost with 11 tags', writeBody('createPost', 'id', { title: 't', authorId: editor.id, tags: Array(11).fill('a') }), editor.token],
    ['createPost anonymous', writeBody('createPost', 'id', { title: 't', authorId: editor.id }), undefined],
    ['updatePost of another author', writeBody('updatePost', 'id', { id: someoneElsesPost, title: 't' }), editor.token],
    ['updatePost of a missing post', writeBody('updatePost', 'id', { id: 'no-such-post', title: 't' }), editor.token],
    ['updatePost with a null title', writeBody('updatePost', 'id', { id: editor.postIds[0], title: null }), editor.token],
    ['updatePost by a user', writeBody('updatePost', 'id', { id: data.draftIds[0], title: 't' }), tokens[0]],
    ['updateUser of another user', writeBody('updateUser', 'id', { id: other.userId, name: 'x' }), tokens[0]],
    ['updateUser with a bad avatar', writeBody('updateUser', 'id', { id: me.userId, avatar: 'ftp://x.test/a.png' }), tokens[0]],
    ['updateUser with an empty name', writeBody('updateUser', 'id', { id: me.userId, name: '' }), tokens[0]],
    ['updateUser with age 151', writeBody('updateUser', 'id', { id: me.userId, age: 151 }), tokens[0]],
    ['addReaction anonymous', writeBody('addReaction', 'id', { postId: someoneElsesPost, type: 'like' }), undefined],
    ['addReaction to another user\'s draft', writeBody('addReaction', 'id', { postId: data.draftIds[1], type: 'like' }), tokens[0]],
    ['addReaction of a bad type', writeBody('addReaction', 'id', { postId: someoneElsesPost, type: 'Like!' }), tokens[0]],
  ];
  for (const [what, body, token] of denied) await compare(what, body, token, { expectErrors: true });
  return { count, baselineDifferences };
}
