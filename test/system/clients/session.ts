import type { IncomingMessage, ServerResponse } from 'node:http';
import { isDeletion, parseSetCookie } from '../../auth/helpers.js';
import type { TestServer } from '../../helpers/server.js';

/*
 * What an app keeps between requests, in Node: the access token and the refresh-token
 * cookie (a browser keeps that cookie itself). `refresh()` is the one both client tests
 * call, written as README "Expired and revoked tokens in clients" shows it; plus a
 * server-side record of the requests, to count refreshes and retries.
 */

/** The cookies a server set, sent back as one `cookie` header (a browser does this itself). */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  /** Takes the response's Set-Cookie headers in order: a later one of the same name wins. */
  store(response: Response): void {
    for (const cookie of response.headers.getSetCookie().map(parseSetCookie)) {
      if (isDeletion(cookie)) this.cookies.delete(cookie.name);
      else this.cookies.set(cookie.name, cookie.value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  has(name: string): boolean {
    return this.cookies.has(name);
  }
}

/** A signed-in app's state: the current access token, and one refresh at a time. */
export class Session {
  private refreshing: Promise<string> | undefined;

  constructor(
    private readonly api: string,
    private readonly jar: CookieJar,
    public accessToken: string,
    readonly userId: string,
  ) {}

  refresh(): Promise<string> {
    this.refreshing ??= fetch(`${this.api}/api/auth/refresh`, { method: 'POST', credentials: 'include', headers: { cookie: this.jar.header() } })
      .then(async (response) => {
        this.jar.store(response); // Node only: a browser keeps the rotated cookie itself
        if (!response.ok) throw new Error('session ended'); // → send the user to sign in
        ({ accessToken: this.accessToken } = (await response.json()) as { accessToken: string });
        return this.accessToken;
      })
      .finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }
}

let counter = 0;

/** Registers a fresh account and signs in through `POST /api/auth/login`, keeping its cookies. */
export async function signedIn(server: TestServer, name = `Client ${++counter}`): Promise<Session> {
  const email = `client${++counter}-${process.pid}@example.test`;
  const password = 'client-password';
  const post = (path: string, body: unknown) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const registered = await post('/api/auth/register', { name, email, password });
  if (registered.status !== 201) throw new Error(`register ${email}: ${registered.status} ${await registered.text()}`);
  const login = await post('/api/auth/login', { email, password });
  if (login.status !== 200) throw new Error(`login ${email}: ${login.status} ${await login.text()}`);
  const jar = new CookieJar();
  jar.store(login);
  if (!jar.has('refresh-token')) throw new Error(`login ${email} set no refresh-token cookie`);
  const body = (await login.json()) as { accessToken: string; user: { id: string } };
  return new Session(server.url, jar, body.accessToken, body.user.id);
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

/** The session's refresh tokens: how many were issued, and how many of them were rotated away. */
export async function refreshTokensOf(server: TestServer, session: Session): Promise<{ issued: number; rotated: number }> {
  const rows = await server.inkwell.backends.db.kysely
    .selectFrom('refresh_tokens')
    .select('rotated_at')
    .where('session_id', '=', sessionIdOf(session.accessToken))
    .execute();
  return { issued: rows.length, rotated: rows.filter((r) => r.rotated_at !== null).length };
}
