/** The service's public API as the fan-out bench uses it: an account, and reactions over HTTP. */

/** Registers a fresh account (`POST /api/auth/register`) and signs in; returns the access token. */
export async function signUp(baseUrl) {
  const account = { name: 'Fan-out Reactor', email: `reactor-${Date.now()}@bench.test`, password: 'fanout-bench-password' };
  const registered = await fetch(`${baseUrl}/api/auth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(account),
  });
  if (registered.status !== 201) throw new Error(`register failed: ${registered.status} ${await registered.text()}`);
  const login = await fetch(`${baseUrl}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: account.email, password: account.password }),
  });
  const body = await login.json();
  if (!login.ok || typeof body.accessToken !== 'string') throw new Error(`login failed: ${login.status} ${JSON.stringify(body)}`);
  return body.accessToken;
}

/** The addReaction mutation; each `type` once per user and post (a repeat emits nothing). */
export async function addReaction({ graphqlUrl, token, postId, type }) {
  const response = await fetch(graphqlUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query: 'mutation($p: ID!, $t: String!) { addReaction(postId: $p, type: $t) { id } }', variables: { p: postId, t: type } }),
  });
  const body = await response.json();
  if (!response.ok || body.errors) throw new Error(`reaction ${type} failed: ${response.status} ${JSON.stringify(body).slice(0, 200)}`);
}

/** The subscription every bench subscriber runs. */
export const SUBSCRIPTION = 'subscription($id: ID!) { postReactionAdded(postId: $id) { id type createdAt user { name } } }';
