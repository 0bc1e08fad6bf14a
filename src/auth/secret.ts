import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../config.js';

/**
 * AUTH_SECRET: the configured one, or (outside production, where config refuses to
 * start without it) one generated on first start and kept in `auth-secret` next to the
 * SQLite file (`./data/` otherwise), mode 0600, reused on every restart so tokens and
 * sessions survive a restart.
 */

export const SECRET_FILE_NAME = 'auth-secret';
const GENERATED_BYTES = 48;
const MIN_BYTES = 32;

export interface ResolvedSecret {
  secret: string;
  source: 'environment' | 'file' | 'generated';
  file?: string;
}

export function secretFilePath(config: Pick<Config, 'database'>): string {
  const { database } = config;
  const dir = database.kind === 'sqlite' && database.file !== ':memory:' ? dirname(resolve(database.file)) : resolve('data');
  return join(dir, SECRET_FILE_NAME);
}

export function resolveAuthSecret(config: Pick<Config, 'authSecret' | 'isProduction' | 'database'>): ResolvedSecret {
  if (config.authSecret !== undefined) return { secret: config.authSecret, source: 'environment' };
  // loadConfig already refuses this; kept as a guard for hand-built configs.
  if (config.isProduction) throw new Error('AUTH_SECRET is required in production');

  const file = secretFilePath(config);
  const existing = readSecretFile(file);
  if (existing !== undefined) return { secret: existing, source: 'file', file };

  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(GENERATED_BYTES).toString('base64url');
  try {
    // 'wx': never overwrite. Two processes starting together: the loser reads the winner's.
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      const raced = readSecretFile(file);
      if (raced !== undefined) return { secret: raced, source: 'file', file };
    }
    throw err;
  }
  return { secret, source: 'generated', file };
}

function readSecretFile(file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  if (Buffer.byteLength(text, 'utf8') < MIN_BYTES) {
    throw new Error(`${file}: the kept auth secret is shorter than ${MIN_BYTES} bytes; delete the file to generate a new one`);
  }
  // Someone loosened the permissions: tighten them again, the secret signs every token.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return text;
}
