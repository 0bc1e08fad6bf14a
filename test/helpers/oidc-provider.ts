import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type Interaction } from 'oidc-provider';

/**
 * A real OpenID Connect provider (panva's oidc-provider, certified) on 127.0.0.1 with
 * a random port, for the external sign-in tests. Its login and consent interactions
 * are answered by code, not a person: the interaction route signs in the account the
 * test chose with `idp.loginAs(id)` and grants what the client asked for.
 */

export interface IdpAccount {
  email?: string;
  emailVerified?: boolean;
  name?: string;
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The account the next login interaction signs in. */
  loginAs(accountId: string): void;
  setAccount(accountId: string, account: IdpAccount): void;
  /** Token-endpoint errors seen (e.g. `invalid_grant` for a replayed code). */
  readonly grantErrors: string[];
  close(): Promise<void>;
}

export async function startTestIdp(options: { redirectUris: string[]; clientId?: string; clientSecret?: string }): Promise<TestIdp> {
  const clientId = options.clientId ?? 'inkwell-test';
  const clientSecret = options.clientSecret ?? 'inkwell-test-client-secret-0123456789';
  const accounts = new Map<string, IdpAccount>();
  let nextAccount: string | undefined;
  const grantErrors: string[] = [];

  // Listen first: the issuer must carry the real port.
  let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
  const server: Server = createServer((req, res) => handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), kid: 'test-key', alg: 'RS256', use: 'sig' };

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [jwk] },
    cookies: { keys: ['test-idp-cookie-key-0123456789abcdef'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    // Explicit lifetimes (seconds); the defaults print a notice each.
    ttl: { Interaction: 600, Session: 3600, Grant: 3600, AccessToken: 600, IdToken: 600, AuthorizationCode: 60 },
    findAccount: async (_ctx: unknown, id: string) => {
      const account = accounts.get(id);
      if (!account) return undefined;
      return {
        accountId: id,
        claims: async () => ({ sub: id, email: account.email, email_verified: account.emailVerified ?? false, name: account.name }),
      };
    },
  });
  provider.on('grant.error', (...args: unknown[]) => {
    const error = args[1] as { error?: string } | undefined;
    grantErrors.push(error?.error ?? 'unknown');
  });

  const oidc = provider.callback();
  handler = (req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      interact(provider, req, res, () => nextAccount).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
      return;
    }
    oidc(req, res);
  };

  return {
    issuer,
    clientId,
    clientSecret,
    grantErrors,
    loginAs(accountId) {
      nextAccount = accountId;
    },
    setAccount(accountId, account) {
      accounts.set(accountId, account);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers a login or consent prompt as a user who agrees to everything would. */
async function interact(provider: Provider, req: IncomingMessage, res: ServerResponse, account: () => string | undefined): Promise<void> {
  const interaction: Interaction = await provider.interactionDetails(req, res);
  const { prompt, params, session } = interaction;

  if (prompt.name === 'login') {
    const accountId = account();
    if (!accountId) throw new Error('the test did not choose an account (idp.loginAs)');
    await provider.interactionFinished(req, res, { login: { accountId } }, { mergeWithLastSubmission: false });
    return;
  }

  if (prompt.name === 'consent') {
    const accountId = session?.accountId;
    if (!accountId) throw new Error('consent without a session');
    const grant = interaction.grantId
      ? ((await provider.Grant.find(interaction.grantId)) ?? new provider.Grant({ accountId, clientId: String(params['client_id']) }))
      : new provider.Grant({ accountId, clientId: String(params['client_id']) });
    const details = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
    if (details.missingOIDCScope) grant.addOIDCScope(details.missingOIDCScope.join(' '));
    if (details.missingOIDCClaims) grant.addOIDCClaims(details.missingOIDCClaims);
    for (const [resource, scopes] of Object.entries(details.missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: interaction.grantId ? {} : { grantId } }, { mergeWithLastSubmission: true });
    return;
  }

  throw new Error(`unexpected prompt ${prompt.name}`);
}
