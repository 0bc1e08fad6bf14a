import type { Role } from '../../src/domain/caller.js';
import type { GqlInit, GqlResponse, TestServer } from '../helpers/server.js';

/** Helpers for the account-area tests: everything goes over real HTTP. */

export const PASSWORD = 'correct horse battery';

export { freeLoopbackPort as freePort, startServerAt } from '../helpers/server.js';

export async function gqlAt<T = any>(url: string, query: string, variables?: Record<string, unknown>, init: GqlInit = {}): Promise<GqlResponse<T>> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', ...init.headers },
    body: JSON.stringify({ query, variables, operationName: init.operationName }),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as GqlResponse<T>['body'] };
}

export interface ParsedCookie {
  name: string;
  value: string;
  /** Attribute names lower-cased; flags map to true. */
  attributes: Record<string, string | true>;
  raw: string;
}

export function parseSetCookie(raw: string): ParsedCookie {
  const [pair = '', ...rest] = raw.split(';');
  const eq = pair.indexOf('=');
  const attributes: Record<string, string | true> = {};
  for (const part of rest) {
    const trimmed = part.trim();
    if (!trimmed) continue;
    const i = trimmed.indexOf('=');
    if (i < 0) attributes[trimmed.toLowerCase()] = true;
    else attributes[trimmed.slice(0, i).toLowerCase()] = trimmed.slice(i + 1);
  }
  return { name: pair.slice(0, eq).trim(), value: pair.slice(eq + 1).trim(), attributes, raw };
}

/**
 * The Set-Cookie of one name in a response, parsed (undefined when not set); the last one
 * when there are several (the refresh token's old path is cleared first).
 */
export function cookieOf(response: Response, name: string): ParsedCookie | undefined {
  return cookiesOf(response, name).at(-1);
}

/** Every Set-Cookie of one name in a response (a name can be set at several paths), parsed. */
export function cookiesOf(response: Response, name: string): ParsedCookie[] {
  return response.headers
    .getSetCookie()
    .map(parseSetCookie)
    .filter((c) => c.name === name);
}

/** A cookie is deleted by this Set-Cookie: empty, and Max-Age=0 or an Expires in the past. */
export function isDeletion(cookie: ParsedCookie): boolean {
  return cookie.value === '' && (cookie.attributes['max-age'] === '0' || Date.parse(String(cookie.attributes['expires'])) <= Date.now());
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});

export const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
  method: 'POST',
  redirect: 'manual',
  headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  body: new URLSearchParams(fields).toString(),
});

let counter = 0;
export const uniqueEmail = (prefix = 'user') => `${prefix}-${process.pid}-${++counter}@example.test`;

export async function register(url: string, email: string, password = PASSWORD, name = 'Test User'): Promise<{ id: string; email: string }> {
  const response = await fetch(`${url}/api/auth/register`, json({ name, email, password }));
  if (response.status !== 201) throw new Error(`register ${email}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string; email: string };
}

export interface Session {
  userId: string;
  accessToken: string;
  expiresAt: string;
  /** `auth-token=…` */
  authCookie: string;
  /** `refresh-token=…` */
  refreshCookie: string;
  response: Response;
}

export async function login(url: string, email: string, password = PASSWORD): Promise<Session> {
  const response = await fetch(`${url}/api/auth/login`, json({ email, password }));
  if (response.status !== 200) throw new Error(`login ${email}: ${response.status} ${await response.clone().text()}`);
  const body = (await response.clone().json()) as { user: { id: string }; accessToken: string; expiresAt: string };
  const auth = cookieOf(response, 'auth-token');
  const refresh = cookieOf(response, 'refresh-token');
  if (!auth || !refresh) throw new Error('login set no cookies');
  return {
    userId: body.user.id,
    accessToken: body.accessToken,
    expiresAt: body.expiresAt,
    authCookie: `auth-token=${auth.value}`,
    refreshCookie: `refresh-token=${refresh.value}`,
    response,
  };
}

/** Registers an account, gives it a role (as the operator script does) and signs it in. */
export async function signUpAs(server: TestServer, role: Role, name = `${role} user`): Promise<Session & { email: string }> {
  const email = uniqueEmail(role);
  await register(server.url, email, PASSWORD, name);
  if (role !== 'user') await server.inkwell.services.users.setRole(email, role);
  return { ...(await login(server.url, email)), email };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** A CSRF token with the cookie that vouches for it. */
export async function csrf(url: string): Promise<{ token: string; cookie: string }> {
  const response = await fetch(`${url}/api/auth/csrf`);
  const { csrfToken } = (await response.json()) as { csrfToken: string };
  const cookie = cookieOf(response, 'csrf-token');
  if (!cookie) throw new Error('no CSRF cookie');
  return { token: csrfToken, cookie: `csrf-token=${cookie.value}` };
}

export const cookies = (...pairs: (string | undefined)[]) => ({ cookie: pairs.filter(Boolean).join('; ') });

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A response body as JSON, loosely typed for assertions. */
export const jsonOf = (response: Response): Promise<any> => response.json() as Promise<any>;
