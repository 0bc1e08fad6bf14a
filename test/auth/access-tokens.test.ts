import { describe, expect, it } from 'vitest';
import { AccessTokens } from '../../src/auth/tokens.js';

/**
 * Verified tokens are remembered (src/auth/tokens.ts); expiry must still be exact on
 * every use, and nothing but the very same text may ever reuse a verification.
 */
const KEY = new TextEncoder().encode('unit-test-secret-that-is-at-least-32-bytes!');
const ISSUER = 'http://inkwell.test';

function clock(start: number) {
  let now = start;
  return { now: () => now, set: (ms: number) => (now = ms) };
}

describe('AccessTokens.verify with remembered verifications', () => {
  it('a remembered token expires exactly when its exp passes', async () => {
    const time = clock(Date.UTC(2026, 10, 23, 12, 0, 0));
    const tokens = new AccessTokens(KEY, ISSUER, time.now);
    const { token, exp } = await tokens.issue({ userId: 'u1', role: 'user', sessionId: 's1' });
    expect(await tokens.verify(token)).toMatchObject({ sub: 'u1', sid: 's1', role: 'user', exp });
    time.set(exp * 1000 - 1);
    expect(await tokens.verify(token)).toMatchObject({ sub: 'u1' });
    time.set(exp * 1000);
    expect(await tokens.verify(token)).toBeNull();
    // Sign-out may still read an expired token's session.
    expect(await tokens.verify(token, { ignoreExpiry: true })).toMatchObject({ sid: 's1' });
  });

  it('an expired token verified first for sign-out is still refused for a request', async () => {
    const time = clock(Date.UTC(2026, 10, 23, 12, 0, 0));
    const tokens = new AccessTokens(KEY, ISSUER, time.now);
    const { token, exp } = await tokens.issue({ userId: 'u2', role: 'admin', sessionId: 's2' });
    time.set(exp * 1000 + 60_000);
    expect(await tokens.verify(token, { ignoreExpiry: true })).toMatchObject({ sid: 's2' });
    expect(await tokens.verify(token)).toBeNull();
  });

  it('a token that differs in one signature character is verified afresh and refused', async () => {
    const tokens = new AccessTokens(KEY, ISSUER);
    const { token } = await tokens.issue({ userId: 'u3', role: 'user', sessionId: 's3' });
    expect(await tokens.verify(token)).not.toBeNull();
    const [head, body, signature] = token.split('.') as [string, string, string];
    const flipped = signature[5] === 'A' ? 'B' : 'A';
    const forged = `${head}.${body}.${signature.slice(0, 5)}${flipped}${signature.slice(6)}`;
    expect(await tokens.verify(forged)).toBeNull();
    // The same claims under another key are not this service's token.
    const other = new AccessTokens(new TextEncoder().encode('another-secret-that-is-at-least-32-bytes!!'), ISSUER);
    expect(await other.verify(token)).toBeNull();
  });
});
