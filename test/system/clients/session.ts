import type { IncomingMessage, ServerResponse } from 'node:http';
import { register } from '../../auth/helpers.js';
import type { TestServer } from '../../helpers/server.js';
import { importSnippets } from './readme.js';

/*
 * What an app keeps between requests: the README's `session` snippet (README "Expired and
 * revoked tokens in clients": `signIn`, `refresh`, the access token and, in Node, the
 * refresh-token cookie), imported as a module with a client snippet after it; plus a
 * server-side record of the requests, to count refreshes and retries.
 */

/** The README's `session` snippet, as the tests reach into it. */
export interface ReadmeSession {
  signIn(email: string, password: string): Promise<void>;
  refresh(): Promise<string>;
  /** Its module-level state: the token (a test may spoil it), and the cookie kept in Node. */
  state: { accessToken: string; readonly refreshCookie: string | undefined };
}

/** What the test appends to the snippets: their bindings, exported. */
const SESSION_EXPORTS = `export { signIn, refresh };
export const state = {
  get accessToken() { return accessToken; },
  set accessToken(value) { accessToken = value; },
  get refreshCookie() { return refreshCookie; },
};`;

let counter = 0;

/**
 * Registers a fresh account, imports the README's `session` snippet followed by the
 * snippets `after` (with `exports` appended, e.g. `export { client };`), and signs in
 * with the snippet's own `signIn`.
 */
export async function signedIn<T extends object = object>(
  server: TestServer,
  dir: string,
  options: { after?: string[]; exports?: string; name?: string } = {},
): Promise<{ app: ReadmeSession & T; userId: string; email: string }> {
  const name = options.name ?? `Client ${++counter}`;
  const email = `client${++counter}-${process.pid}@example.test`;
  const password = 'client-password';
  const { id } = await register(server.url, email, password, name);
  const app = await importSnippets<ReadmeSession & T>(dir, server.url, ['session', ...(options.after ?? [])], `${SESSION_EXPORTS}\n${options.exports ?? ''}`);
  await app.signIn(email, password);
  return { app, userId: id, email };
}

/** The token with one character of its signature changed: well-formed, but it fails verification. */
export function forged(token: string): string {
  const [header, payload, signature] = token.split('.') as [string, string, string];
  // Not the last character: its low bits are padding, and changing only those may decode alike.
  const i = 10;
  return `${header}.${payload}.${signature.slice(0, i)}${signature[i] === 'A' ? 'B' : 'A'}${signature.slice(i + 1)}`;
}

/** The `sid` claim of an access token: the session it belongs to. */
export function sessionIdOf(token: string): string {
  return JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).sid;
}

/**
 * Every HTTP request the server receives from now on, in the order they arrived, as
 * `"POST /graphql 401"` once answered (the path without its query string). WebSocket
 * upgrades are not requests.
 */
export function recordRequests(server: TestServer): { list(): string[]; clear(): void } {
  let seen: { line: string; status?: number }[] = [];
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    const entry: { line: string; status?: number } = { line: `${request.method} ${request.url?.split('?', 1)[0]}` };
    seen.push(entry);
    response.on('finish', () => (entry.status = response.statusCode));
  };
  server.inkwell.app.server.on('request', listener);
  return {
    list: () => seen.map((e) => `${e.line} ${e.status ?? 'pending'}`),
    clear: () => (seen = []),
  };
}

/** The refresh tokens of an access token's session: how many were issued, and how many of them were rotated away. */
export async function refreshTokensOf(server: TestServer, accessToken: string): Promise<{ issued: number; rotated: number }> {
  const rows = await server.inkwell.backends.db.kysely
    .selectFrom('refresh_tokens')
    .select('rotated_at')
    .where('session_id', '=', sessionIdOf(accessToken))
    .execute();
  return { issued: rows.length, rotated: rows.filter((r) => r.rotated_at !== null).length };
}
