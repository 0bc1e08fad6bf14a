/**
 * Before anything is measured, the reference must answer like Inkwell: every shape of
 * the mix, anonymous and signed in, on published posts, the caller's own draft and
 * someone else's, must give the same data from both (field rules included: email,
 * drafts, `me`); addReaction must behave the same, a repeat returning the stored
 * reaction. A difference throws: a benchmark against a wrong reference means nothing.
 */
import { isDeepStrictEqual } from 'node:util';
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

/** Both must give the same data; returns both answers. */
export async function sameAnswer({ inkwell, reference, body, token, what }) {
  const [ours, theirs] = await Promise.all([ask(inkwell.graphqlUrl, body, token), ask(reference.graphqlUrl, body, token)]);
  if (!isDeepStrictEqual(ours, theirs)) {
    throw new Error(`the reference answers ${what} differently:\n  Inkwell:   ${JSON.stringify(ours).slice(0, 400)}\n  reference: ${JSON.stringify(theirs).slice(0, 400)}`);
  }
  return [ours, theirs];
}

/** data: { postIds, writablePostIds, userIds, draftIds }; accounts[i] holds tokens[i]. */
export async function checkParity({ inkwell, reference, data, accounts, tokens }) {
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
  return cases.length + 2;
}
