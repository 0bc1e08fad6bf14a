import * as client from 'openid-client';
import type { OAuthProviderConfig } from '../../config.js';
import type { OAuthFlow } from './flow.js';
import { githubProfile, oidcProfile, type ExternalProfile, type GitHubEmail, type GitHubUser } from './profile.js';

/**
 * External sign-in with openid-client: the authorization code flow with PKCE (S256)
 * and `state` everywhere, plus `nonce` and ID-token validation for OpenID Connect.
 * OIDC providers are configured by discovery (lazily, at the first sign-in, retried
 * after a failure, so an unreachable provider never stops the service); GitHub is a
 * plain OAuth 2.0 preset whose profile comes from its REST API.
 */

export type ProviderType = 'oidc' | 'oauth';

export interface ExternalProvider {
  readonly id: string;
  readonly name: string;
  readonly type: ProviderType;
  /** Origins the browser is sent to (the CSP's form-action must allow them). */
  readonly origins: readonly string[];
  /** The authorization URL to send the browser to, and what the callback must check. */
  start(redirectUri: string): Promise<{ url: URL; flow: Omit<OAuthFlow, 'provider' | 'callbackUrl'> }>;
  /** Validates the callback (state, PKCE, nonce, ID token), exchanges the code and reads the profile. */
  finish(callbackUrl: URL, flow: OAuthFlow): Promise<ExternalProfile>;
}

const TIMEOUT_SECONDS = 10;
const DISPLAY_NAMES: Record<string, string> = {
  github: 'GitHub',
  google: 'Google',
  gitlab: 'GitLab',
  keycloak: 'Keycloak',
  microsoft: 'Microsoft',
  azure: 'Microsoft',
  okta: 'Okta',
  auth0: 'Auth0',
  apple: 'Apple',
};

export function displayName(id: string): string {
  return DISPLAY_NAMES[id] ?? id.charAt(0).toUpperCase() + id.slice(1);
}

async function pkce(): Promise<{ codeVerifier: string; codeChallenge: string }> {
  const codeVerifier = client.randomPKCECodeVerifier();
  return { codeVerifier, codeChallenge: await client.calculatePKCECodeChallenge(codeVerifier) };
}

class OidcProvider implements ExternalProvider {
  readonly type = 'oidc';
  readonly name: string;
  readonly origins: readonly string[];
  private configuration: Promise<client.Configuration> | undefined;

  constructor(private readonly settings: OAuthProviderConfig & { issuer: string }) {
    this.name = displayName(settings.id);
    this.origins = [new URL(settings.issuer).origin];
  }

  get id(): string {
    return this.settings.id;
  }

  private config(): Promise<client.Configuration> {
    this.configuration ??= this.discover().catch((err: unknown) => {
      this.configuration = undefined; // try discovery again at the next sign-in
      throw err;
    });
    return this.configuration;
  }

  private async discover(): Promise<client.Configuration> {
    const { issuer, clientId, clientSecret } = this.settings;
    // config.ts accepts an http:// issuer outside production only (a local IdP).
    const insecure = new URL(issuer).protocol === 'http:';
    const execute = insecure ? [client.allowInsecureRequests] : [];
    const discovered = await client.discovery(new URL(issuer), clientId, clientSecret, undefined, { execute, timeout: TIMEOUT_SECONDS });
    const metadata = discovered.serverMetadata();
    // client_secret_basic is the default of RFC 8414 and OIDC; use POST only if that is all the server takes.
    const methods = metadata.token_endpoint_auth_methods_supported;
    const auth =
      methods && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')
        ? client.ClientSecretPost(clientSecret)
        : client.ClientSecretBasic(clientSecret);
    const config = new client.Configuration(metadata, clientId, clientSecret, auth);
    config.timeout = TIMEOUT_SECONDS;
    if (insecure) client.allowInsecureRequests(config);
    return config;
  }

  async start(redirectUri: string) {
    const config = await this.config();
    const { codeVerifier, codeChallenge } = await pkce();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      response_type: 'code',
      code_challenge: codeChallenge,
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return { url, flow: { state, nonce, codeVerifier } };
  }

  async finish(callbackUrl: URL, flow: OAuthFlow): Promise<ExternalProfile> {
    const config = await this.config();
    if (!flow.nonce) throw new Error('an OpenID Connect flow without a nonce');
    const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: flow.codeVerifier,
      expectedState: flow.state,
      expectedNonce: flow.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims();
    if (!claims) throw new Error('the provider returned no ID token');
    let merged: Record<string, unknown> = { ...claims };
    if (config.serverMetadata().userinfo_endpoint) {
      // Many providers put email and name only in UserInfo; its `sub` must match the ID token's.
      const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
      merged = { ...merged, ...info, sub: claims.sub };
    }
    return oidcProfile(this.id, merged);
  }
}

const GITHUB = {
  issuer: 'https://github.com',
  authorization_endpoint: 'https://github.com/login/oauth/authorize',
  token_endpoint: 'https://github.com/login/oauth/access_token',
  api: 'https://api.github.com',
} as const;

class GitHubProvider implements ExternalProvider {
  readonly id = 'github';
  readonly name = 'GitHub';
  readonly type = 'oauth';
  readonly origins = [GITHUB.issuer];
  private readonly config: client.Configuration;

  constructor(
    settings: OAuthProviderConfig,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {
    const metadata: client.ServerMetadata = {
      issuer: GITHUB.issuer,
      authorization_endpoint: GITHUB.authorization_endpoint,
      token_endpoint: GITHUB.token_endpoint,
    };
    this.config = new client.Configuration(metadata, settings.clientId, settings.clientSecret, client.ClientSecretPost(settings.clientSecret));
    this.config.timeout = TIMEOUT_SECONDS;
  }

  async start(redirectUri: string) {
    const { codeVerifier, codeChallenge } = await pkce();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(this.config, {
      redirect_uri: redirectUri,
      scope: 'read:user user:email',
      code_challenge: codeChallenge,
      code_challenge_method: 'S256',
      state,
    });
    return { url, flow: { state, codeVerifier } };
  }

  async finish(callbackUrl: URL, flow: OAuthFlow): Promise<ExternalProfile> {
    const tokens = await client.authorizationCodeGrant(this.config, callbackUrl, {
      pkceCodeVerifier: flow.codeVerifier,
      expectedState: flow.state,
    });
    const [user, emails] = await Promise.all([
      this.api<GitHubUser>('/user', tokens.access_token),
      this.api<GitHubEmail[]>('/user/emails', tokens.access_token).catch(() => [] as GitHubEmail[]),
    ]);
    return githubProfile(user, Array.isArray(emails) ? emails : []);
  }

  private async api<T>(path: string, accessToken: string): Promise<T> {
    const response = await this.fetchImpl(`${GITHUB.api}${path}`, {
      headers: {
        authorization: `Bearer ${accessToken}`,
        accept: 'application/vnd.github+json',
        'user-agent': 'inkwell',
        'x-github-api-version': '2022-11-28',
      },
      signal: AbortSignal.timeout(TIMEOUT_SECONDS * 1000),
    });
    if (!response.ok) throw new Error(`GitHub ${path} answered ${response.status}`);
    return (await response.json()) as T;
  }
}

/** The configured external providers by id, in configuration order. */
export function createProviders(configs: readonly OAuthProviderConfig[]): Map<string, ExternalProvider> {
  const providers = new Map<string, ExternalProvider>();
  for (const settings of configs) {
    if (settings.kind === 'github') providers.set(settings.id, new GitHubProvider(settings));
    else if (settings.issuer) providers.set(settings.id, new OidcProvider({ ...settings, issuer: settings.issuer }));
  }
  return providers;
}
