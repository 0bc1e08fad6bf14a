import { DEMO_PASSWORD } from '../../src/domain/seed.js';
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
