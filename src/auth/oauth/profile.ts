/**
 * What Inkwell keeps from an external identity, whatever the provider: a stable
 * account id, an email with whether the provider verified it, and a display name.
 */
export interface ExternalProfile {
  provider: string;
  /** The provider's stable id for the account (OIDC `sub`, GitHub's numeric id). */
  accountId: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

/** From OIDC ID-token claims merged with the UserInfo response. */
export function oidcProfile(provider: string, claims: Record<string, unknown>): ExternalProfile {
  const sub = claims['sub'];
  if (typeof sub !== 'string' || sub.length === 0 || sub.length > 255) throw new Error('the provider gave no usable subject');
  const email = typeof claims['email'] === 'string' ? claims['email'] : null;
  // Some providers send the boolean as a string.
  const verified = claims['email_verified'] === true || claims['email_verified'] === 'true';
  const name = firstString(claims['name'], joinNames(claims['given_name'], claims['family_name']), claims['preferred_username'], claims['nickname']);
  return { provider, accountId: sub, email, emailVerified: email !== null && verified, name };
}

export interface GitHubUser {
  id?: unknown;
  login?: unknown;
  name?: unknown;
}

export interface GitHubEmail {
  email?: unknown;
  primary?: unknown;
  verified?: unknown;
}

/** From GitHub's `/user` and `/user/emails`: the primary address, verified only if GitHub says so. */
export function githubProfile(user: GitHubUser, emails: readonly GitHubEmail[]): ExternalProfile {
  if ((typeof user.id !== 'number' && typeof user.id !== 'string') || String(user.id).length === 0) {
    throw new Error('GitHub gave no account id');
  }
  const primary = emails.find((e) => e.primary === true && typeof e.email === 'string');
  return {
    provider: 'github',
    accountId: String(user.id),
    email: primary ? (primary.email as string) : null,
    emailVerified: primary?.verified === true,
    name: firstString(user.name, user.login),
  };
}

function firstString(...values: unknown[]): string | null {
  for (const value of values) if (typeof value === 'string' && value.trim() !== '') return value.trim();
  return null;
}

function joinNames(given: unknown, family: unknown): string | null {
  const parts = [given, family].filter((p): p is string => typeof p === 'string' && p.trim() !== '');
  return parts.length > 0 ? parts.join(' ') : null;
}
