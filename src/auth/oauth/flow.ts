import { EncryptJWT, errors, jwtDecrypt } from 'jose';
import { OAUTH_FLOW_MAX_AGE } from '../cookies.js';

/**
 * The state of one external sign-in between the redirect to the provider and its
 * callback: `state`, the PKCE verifier, the OIDC `nonce` and where to go afterwards.
 * It travels in an HttpOnly cookie scoped to the provider's callback path, encrypted
 * and authenticated (JWE, dir + A256GCM, a key derived from AUTH_SECRET), so it is
 * bound to the browser that started the flow, cannot be read or altered, needs no
 * server storage and expires after ten minutes.
 */

export interface OAuthFlow {
  provider: string;
  state: string;
  codeVerifier: string;
  nonce?: string;
  callbackUrl: string;
}

export class FlowSealer {
  constructor(private readonly key: Uint8Array) {}

  async seal(flow: OAuthFlow): Promise<string> {
    return new EncryptJWT({ ...flow })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setIssuedAt()
      .setExpirationTime(`${OAUTH_FLOW_MAX_AGE}s`)
      .encrypt(this.key);
  }

  /** The flow in a cookie, when genuine, unexpired and made for this provider. */
  async open(value: string | undefined, provider: string): Promise<OAuthFlow | undefined> {
    if (!value || value.length > 4096) return undefined;
    try {
      const { payload } = await jwtDecrypt(value, this.key, {
        keyManagementAlgorithms: ['dir'],
        contentEncryptionAlgorithms: ['A256GCM'],
      });
      const { provider: p, state, codeVerifier, nonce, callbackUrl } = payload as Record<string, unknown>;
      if (p !== provider || typeof state !== 'string' || typeof codeVerifier !== 'string' || typeof callbackUrl !== 'string') return undefined;
      if (nonce !== undefined && typeof nonce !== 'string') return undefined;
      return { provider: p, state, codeVerifier, nonce, callbackUrl };
    } catch (err) {
      if (err instanceof errors.JOSEError) return undefined;
      throw err;
    }
  }
}
