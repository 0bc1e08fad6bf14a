import { createHmac } from 'node:crypto';
import type { Counters } from '../rate-limit/counters.js';

export const LOGIN_FAILURE_LIMIT = 10;
export const LOGIN_FAILURE_WINDOW_MS = 15 * 60 * 1000;

/**
 * Failed logins per email address: at most LOGIN_FAILURE_LIMIT attempts that did not
 * succeed per LOGIN_FAILURE_WINDOW_MS, whatever the client's address, so a password
 * guesser spread over many addresses is slowed as much as one. Every attempt counts
 * before the password is checked (so concurrent guesses cannot slip past a check) and
 * a success clears the count. Unknown addresses are counted like known ones (nothing
 * is revealed), and the store sees an HMAC of the address, never the address.
 */
export class LoginThrottle {
  constructor(
    private readonly counters: Counters,
    private readonly key: Buffer,
    private readonly limit = LOGIN_FAILURE_LIMIT,
    private readonly windowMs = LOGIN_FAILURE_WINDOW_MS,
  ) {}

  /** Counts an attempt; `allowed: false` with the seconds to wait when over the limit. */
  async attempt(email: string): Promise<{ allowed: boolean; retryAfterSeconds: number }> {
    const { count, resetInMs } = await this.counters.hit(this.keyOf(email), this.windowMs);
    return { allowed: count <= this.limit, retryAfterSeconds: Math.max(1, Math.ceil(resetInMs / 1000)) };
  }

  async succeeded(email: string): Promise<void> {
    await this.counters.reset(this.keyOf(email), this.windowMs);
  }

  private keyOf(email: string): string {
    return `login:${createHmac('sha256', this.key).update(email, 'utf8').digest('base64url')}`;
  }
}
