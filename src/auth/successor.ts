import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * Sealing a rotated refresh token's successor for the grace window (see sessions.ts):
 * AES-256-GCM under a key derived (HKDF) from the rotated token itself, which only its
 * holders know. Without that token the stored ciphertext is useless.
 */

function successorKey(rotatedToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(rotatedToken, 'utf8'), 'inkwell-refresh', 'successor v1', 32));
}

export function sealSuccessor(successor: string, rotatedToken: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', successorKey(rotatedToken), iv);
  const body = Buffer.concat([cipher.update(successor, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

/** The successor, or undefined when the ciphertext was not sealed with this token (or was altered). */
export function unsealSuccessor(sealed: string, rotatedToken: string): string | undefined {
  try {
    const raw = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', successorKey(rotatedToken), raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
