/**
 * Before anything is measured, the reference must answer like Inkwell: every shape of
 * the mix, anonymous and signed in, on published posts, the caller's own draft and
 * someone else's, must give the same data from both (field rules included: email,
 * drafts, `me`); addReaction must behave the same, a repeat returning the stored
 * reaction. A difference throws: a benchmark against a wrong reference means nothing.
 */
import { isDeepStrictEqual } from 'node:util';
import { SignJWT } from 'jose';
import { mirrorSessions, revokeSession, signIn } from './accounts.mjs';
import { requestBody } from './mix.mjs';

async function ask(url, body, token) {
  const headers = { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(url, { method: 'POST', headers, body });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`HTTP ${response.status} from ${url}: ${text.slice(0, 300)}`);
  const json = JSON.parse(text);
  if (json.errors) throw new Error(`errors from ${url}: ${text.slice(0, 300)}`);
  return json.data;
}

/** A refused credential: 401 UNAUTHENTICATED with a Bearer challenge (docs/permissions.md). */
async function refused(url, body, token, what) {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body });
  const text = await response.text();
  const code = response.status === 401 ? JSON.parse(text).errors?.[0]?.extensions?.code : undefined;
  if (code !== 'UNAUTHENTICATED' || !response.headers.get('www-authenticate')?.startsWith('Bearer')) {
    throw new Error(`${what} at ${url}: HTTP ${response.status} ${text.slice(0, 200)}, expected 401 UNAUTHENTICATED`);
  }
}

/** Both must give the same data; returns both answers. */
export async function sameAnswer({ inkwell, reference, body, token, what }) {
  const [ours, theirs] = await Promise.all([ask(inkwell.graphqlUrl, body, token), ask(reference.graphqlUrl, body, token)]);
  if (!isDeepStrictEqual(ours, theirs)) {
    throw new Error(`the reference answers ${what} differently:\n  Inkwell:   ${JSON.stringify(ours).slice(0, 400)}\n  reference: ${JSON.stringify(theirs).slice(0, 400)}`);
  }
  return [ours, theirs];
}

/** Field rules the mix does not reach: others' email, drafts in lists and counts. */
const RULES = [
  ['user with email and drafts', 'query ($id: ID!) { user(id: $id) { id email postsCount posts(limit: 3) { id published } } }'],
  ['posts with drafts and author emails', '{ posts(limit: 60) { id published author { id email } } }'],
  ['users with email', '{ users(limit: 5) { id email role } }'],
];

/**
 * data: { postIds, writablePostIds, userIds, draftIds }; accounts[i] holds tokens[i];
 * targets: { inkwell, reference } databases (bench/mixed/accounts.mjs), for sessions.
 */
export async function checkParity({ inkwell, reference, data, accounts, tokens, targets }) {
  const [me, other] = [accounts[0], accounts[1]];
  const posts = [data.writablePostIds[0], data.draftIds[0], data.draftIds[1]];
  const users = [data.userIds[0], me.userId];
  const cases = [];
  for (const token of [undefined, tokens[0]]) {
    const who = token ? `signed in as ${me.email}` : 'anonymous';
    for (const id of posts) cases.push(['post', { id }, token, who], ['reactions', { id }, token, who]);
    for (const id of users) cases.push(['user', { id }, token, who]);
    cases.push(['posts', undefined, token, who], ['me', undefined, token, who]);
  }
  for (const [shape, variables, token, who] of cases) {
    await sameAnswer({ inkwell, reference, body: requestBody(shape, variables), token, what: `${shape} ${JSON.stringify(variables ?? {})} (${who})` });
  }
  for (const token of [undefined, tokens[0]]) {
    const who = token ? `signed in as ${me.email}` : 'anonymous';
    for (const [what, query] of RULES) {
      for (const id of query.includes('$id') ? [me.userId, other.userId] : [undefined]) {
        const body = JSON.stringify(id ? { query, variables: { id } } : { query });
        await sameAnswer({ inkwell, reference, body, token, what: `${what} ${id ?? ''} (${who})` });
        cases.push(what);
      }
    }
  }

  // Credentials: a live session; the same session revoked and a token signed with another key are refused.
  const meBody = requestBody('me');
  const [fresh] = await signIn(inkwell.url, [accounts[2]]);
  await mirrorSessions(targets.inkwell, targets.reference);
  const [live] = await sameAnswer({ inkwell, reference, body: meBody, token: fresh, what: 'me with a fresh token' });
  if (live.me?.id !== accounts[2].userId) throw new Error('me with a fresh token: not the signed-in user');
  const claims = JSON.parse(Buffer.from(fresh.split('.')[1], 'base64url').toString('utf8'));
  await revokeSession([targets.inkwell, targets.reference], claims.sid);
  const forged = await new SignJWT({ role: claims.role, sid: claims.sid })
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .setSubject(claims.sub).setIssuer(claims.iss).setAudience(claims.aud).setIssuedAt().setExpirationTime('5m')
    .sign(new TextEncoder().encode('not-the-bench-secret-not-the-bench-secret'));
  for (const [what, token] of [['a revoked session', fresh], ['a forged token', forged]]) {
    for (const side of [inkwell, reference]) await refused(side.graphqlUrl, meBody, token, `me with ${what}`);
  }

  // addReaction: the same reaction on each side (their own copies of the data), then a repeat.
  const variables = { postId: data.writablePostIds[1], type: 'like' };
  const body = requestBody('addReaction', variables);
  const first = await Promise.all([ask(inkwell.graphqlUrl, body, tokens[1]), ask(reference.graphqlUrl, body, tokens[1])]);
  const again = await Promise.all([ask(inkwell.graphqlUrl, body, tokens[1]), ask(reference.graphqlUrl, body, tokens[1])]);
  const strip = ({ addReaction: { id: _id, ...rest } }) => rest;
  if (!isDeepStrictEqual(strip(first[0]), strip(first[1]))) {
    throw new Error(`addReaction differs (${other.email}): Inkwell ${JSON.stringify(first[0])}, reference ${JSON.stringify(first[1])}`);
  }
  for (const side of [0, 1]) {
    if (!isDeepStrictEqual(first[side], again[side])) {
      throw new Error(`${side ? 'reference' : 'Inkwell'}: a repeated addReaction did not return the stored one`);
    }
  }
  if (first[0].addReaction.post.likes !== 1) throw new Error(`addReaction: likes ${first[0].addReaction.post.likes}, expected 1`);
  return cases.length + 5;
}
