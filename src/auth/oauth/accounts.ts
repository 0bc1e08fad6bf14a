import type { Kysely } from 'kysely';
import type { User } from '../../domain/types.js';
import type { UserService } from '../../domain/users.js';
import { checkEmail, isUniqueViolation } from '../../domain/validate.js';
import { BadUserInputError, ConflictError } from '../../errors.js';
import type { AuthDatabase } from '../db.js';
import type { ExternalProfile } from './profile.js';

/**
 * Finds the local user of an external identity (docs/accounts.md): by the provider's
 * account id, else the account whose email the provider says is verified, else a new
 * account. An unverified email neither links to an existing account nor is kept on a
 * new one, so nobody can take over or squat an address through a provider account
 * (docs/design-notes.md#external-accounts).
 */

export type ExternalSignIn = { ok: true; user: User; created: boolean } | { ok: false; reason: 'not-linked' };

export class ExternalAccounts {
  constructor(
    private readonly db: Kysely<AuthDatabase>,
    private readonly users: UserService,
  ) {}

  async signIn(profile: ExternalProfile): Promise<ExternalSignIn> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const linked = await this.linkedUser(profile);
      if (linked) return { ok: true, user: linked, created: false };

      const email = usableEmail(profile.email);
      const existing = email ? await this.users.findByEmail(email) : undefined;
      if (existing) {
        if (!profile.emailVerified) return { ok: false, reason: 'not-linked' };
        const { passwordHash: _hash, ...user } = existing;
        if (await this.link(profile, user.id)) return { ok: true, user, created: false };
        continue; // the identity was linked meanwhile (a concurrent callback): look again
      }

      let user: User;
      try {
        user = await this.users.insertAccount({
          name: displayNameOf(profile, email),
          email: email && profile.emailVerified ? email : null,
          passwordHash: null,
        });
      } catch (err) {
        if (err instanceof ConflictError) continue; // the email was registered meanwhile
        throw err;
      }
      if (await this.link(profile, user.id)) return { ok: true, user, created: true };
      // A concurrent first sign-in of the same identity won: drop our fresh, empty account.
      await this.db.deleteFrom('users').where('id', '=', user.id).execute();
    }
    throw new Error('could not settle the external account after concurrent changes');
  }

  private async linkedUser(profile: ExternalProfile): Promise<User | undefined> {
    const row = await this.db
      .selectFrom('oauth_accounts')
      .select('user_id')
      .where('provider', '=', profile.provider)
      .where('provider_account_id', '=', profile.accountId)
      .executeTakeFirst();
    if (!row) return undefined;
    const [user] = await this.users.byIds([row.user_id]);
    return user;
  }

  /** False when this identity is already linked (the primary key refused the row). */
  private async link(profile: ExternalProfile, userId: string): Promise<boolean> {
    try {
      await this.db
        .insertInto('oauth_accounts')
        .values({ provider: profile.provider, provider_account_id: profile.accountId, user_id: userId, created_at: new Date().toISOString() })
        .execute();
      return true;
    } catch (err) {
      if (isUniqueViolation(err)) return false;
      throw err;
    }
  }
}

function usableEmail(email: string | null): string | null {
  if (email === null) return null;
  try {
    return checkEmail(email);
  } catch (err) {
    if (err instanceof BadUserInputError) return null;
    throw err;
  }
}

/** A valid display name (1–100 characters, no NUL) from whatever the provider gave. */
function displayNameOf(profile: ExternalProfile, email: string | null): string {
  const candidates = [profile.name, email ? email.slice(0, email.indexOf('@')) : null, `${profile.provider} user`];
  for (const candidate of candidates) {
    const cleaned = candidate?.replace(/\u0000/g, '').trim();
    if (cleaned) return [...cleaned].slice(0, 100).join('');
  }
  return 'New user';
}
