import type { User } from '../domain/types.js';
import type { UserService } from '../domain/users.js';
import { checkEmail, checkName, normaliseEmail } from '../domain/validate.js';
import { BadUserInputError, ConflictError } from '../errors.js';
import { passwordProblem, type PasswordHasher } from './passwords.js';
import type { LoginThrottle } from './login-throttle.js';

/**
 * Email-and-password accounts: registration and sign-in. Emails are trimmed and
 * lower-cased before anything else, so `A@x.io` and `a@x.io` are one account.
 */

export class RegistrationError extends Error {
  constructor(
    readonly status: 400 | 409,
    message: string,
  ) {
    super(message);
  }
}

export type SignInResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'invalid' }
  | { ok: false; reason: 'throttled'; retryAfterSeconds: number };

export const INVALID_CREDENTIALS = 'Invalid email or password';

export class Credentials {
  constructor(
    private readonly users: UserService,
    private readonly hasher: PasswordHasher,
    private readonly throttle: LoginThrottle,
  ) {}

  /** 201 material: the new account; RegistrationError with 400 or 409 otherwise. */
  async register(input: { name?: unknown; email?: unknown; password?: unknown }): Promise<User> {
    const { email, password } = input;
    if (typeof email !== 'string' || email.trim() === '' || typeof password !== 'string' || password === '') {
      throw new RegistrationError(400, 'email and password are required');
    }
    let normalised: string;
    let name: string;
    try {
      normalised = checkEmail(email);
      name = input.name === undefined || input.name === null || input.name === '' ? nameFromEmail(normalised) : checkName(input.name as string);
    } catch (err) {
      if (err instanceof BadUserInputError) throw new RegistrationError(400, err.message);
      throw err;
    }
    const problem = passwordProblem(password);
    if (problem) throw new RegistrationError(400, problem);

    const passwordHash = await this.hasher.hash(password);
    try {
      // The unique index decides between concurrent registrations of one email.
      return await this.users.insertAccount({ name, email: normalised, passwordHash });
    } catch (err) {
      if (err instanceof ConflictError) throw new RegistrationError(409, 'Email already registered');
      throw err;
    }
  }

  /**
   * Checks an email and password. Unknown emails, accounts without a password and
   * wrong passwords fail alike and take the same time (a bcrypt comparison each).
   */
  async signIn(emailInput: string, password: string): Promise<SignInResult> {
    const email = normaliseEmail(emailInput);
    const attempt = await this.throttle.attempt(email);
    if (!attempt.allowed) return { ok: false, reason: 'throttled', retryAfterSeconds: attempt.retryAfterSeconds };

    // An address that cannot be stored cannot be an account; it still costs a comparison.
    const lookup = email.length > 0 && email.length <= 254 && !email.includes('\u0000');
    const account = lookup ? await this.users.findByEmail(email) : undefined;
    const matched = await this.hasher.verify(password, account?.passwordHash);
    if (!account || !matched) return { ok: false, reason: 'invalid' };

    await this.throttle.succeeded(email);
    if (account.passwordHash && this.hasher.needsRehash(account.passwordHash)) {
      // Made at a lower cost than today's: replace it now that we know the password.
      await this.users.setPasswordHash(account.id, await this.hasher.hash(password));
    }
    const { passwordHash: _hash, ...user } = account;
    return { ok: true, user };
  }
}

/** A display name when registration gives none: the address's local part. */
export function nameFromEmail(email: string): string {
  const local = email.slice(0, email.indexOf('@')) || email;
  return [...local].slice(0, 100).join('');
}
