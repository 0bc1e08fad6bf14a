import type { Role } from '../../src/domain/caller.js';
import { DEMO_PASSWORD } from '../../src/domain/seed.js';
import type { User } from '../../src/domain/types.js';
import { register } from '../auth/helpers.js';
import type { TestServer } from './server.js';

/** A signed-in caller: the access token and the headers that carry it. */
export interface SignedIn {
  user: { id: string; name: string; email: string; role: string };
  accessToken: string;
  /** `{authorization: 'Bearer …'}`, to spread into a request's headers. */
  headers: { authorization: string };
  /** The `auth-token` cookie as a `Cookie` header value (`auth-token=…`), when the server set one. */
  cookie: string | undefined;
}

/**
 * Signs in through `POST /api/auth/login` (docs/accounts.md) with a seeded demo account
 * (start the server with `SEED_DEMO_DATA: 'auto'`), or any account and password.
 */
export async function signIn(server: TestServer, email: string, password: string = DEMO_PASSWORD): Promise<SignedIn> {
  const response = await fetch(`${server.url}/api/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`sign-in as ${email} failed: ${response.status} ${text.slice(0, 200)}`);
  const body = JSON.parse(text) as { user: SignedIn['user']; accessToken: string };
  if (typeof body.accessToken !== 'string' || !body.user) throw new Error(`sign-in as ${email}: unexpected body ${text.slice(0, 200)}`);
  const cookie = response.headers
    .getSetCookie()
    .map((c) => c.split(';', 1)[0]!)
    .find((c) => c.startsWith('auth-token='));
  return { user: body.user, accessToken: body.accessToken, headers: { authorization: `Bearer ${body.accessToken}` }, cookie };
}

export interface Account {
  user: User;
  /** The access token from `POST /api/auth/login`. */
  token: string;
  /** `auth-token=…`, as a Cookie header value. */
  cookie: string;
  /** What signs it in again. */
  password: string;
}

let accounts = 0;

/**
 * A real account: registered through `POST /api/auth/register`, given its role by the
 * operator path (services), signed in through `POST /api/auth/login`. Registering
 * emits `userCreated`, so make accounts before subscribing to it.
 */
export async function account(server: TestServer, role: Role = 'user', name = `${role} ${++accounts}`): Promise<Account> {
  const email = `account-${role}-${++accounts}@example.test`;
  const password = 'account-password';
  await register(server.url, email, password, name);
  if (role !== 'user') await server.inkwell.services.users.setRole(email, role);
  const signed = await signIn(server, email, password);
  const [user] = await server.inkwell.services.users.byIds([signed.user.id]);
  if (!user || !signed.cookie) throw new Error(`sign-in of ${email} gave no user or cookie`);
  return { user, token: signed.accessToken, cookie: signed.cookie, password };
}
