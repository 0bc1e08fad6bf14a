import { createHmac } from 'node:crypto';
import type { SlidingWindow } from '../rate-limit/sliding-window.js';

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60 * 1000;

/**
 * Failed logins per email address: at most LOGIN_FAILURE_LIMIT attempts that did not
 * succeed within any LOGIN_FAILURE_WINDOW_MS (a sliding window, so no fresh allowance at
 * a clock boundary), whatever the client's address, so a password guesser spread over
 * many addresses is slowed as much as one. Every attempt counts before the password is
 * checked (so concurrent guesses cannot slip past a check) and a success clears the
 * count. Unknown addresses are counted like known ones (nothing is revealed), and the
 * store sees an HMAC of the address, never the address.
 */
export class LoginThrottle {
  constructor(
    private readonly window: SlidingWindow,
    private readonly key: Buffer,
  ) {}

  /** Counts an attempt; `allowed: false` with the seconds until the next attempt is allowed. */
  async attempt(email: string): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    const { allowed, retryAfterMs } = await this.window.take(this.keyOf(email));
    return { allowed, retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(retryAfterMs / 1000)) };
  }

  async succeeded(email: string): Promise<void> {
    await this.window.clear(this.keyOf(email));
  }

  private keyOf(email: string): string {
    return createHmac('sha256', this.key).update(email, 'utf8').digest('base64url');
  }
}
