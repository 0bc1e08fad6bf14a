import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { builtEntry } from './helpers/service-build.js';

/**
 * docs/limits.md, "Configuration errors": an invalid configuration names every variable
 * at fault in one message — schema errors and the rules across variables together —
 * not one per attempt.
 */
const bad = {
  NODE_ENV: 'production',
  PORT: 'eighty',
  RATE_LIMIT_MAX: '0',
  WS_MAX_CONNECTIONS_PER_CLIENT: '-1',
  AUTH_SECRET: 'too short',
  OAUTH_ACME_ISSUER: 'https://id.example',
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('configuration errors', () => {
  it('names every variable at fault at once', () => {
    const named = problemsOf(bad).map((p) => p.split(':', 1)[0]);
    expect(named).toEqual(
      expect.arrayContaining(['PORT', 'RATE_LIMIT_MAX', 'WS_MAX_CONNECTIONS_PER_CLIENT', 'AUTH_SECRET', 'OAUTH_ACME_CLIENT_ID', 'OAUTH_ACME_CLIENT_SECRET']),
    );
  });

  it('a production start without AUTH_SECRET is named beside a schema error', () => {
    const named = problemsOf({ NODE_ENV: 'production', QUERY_HEAVY_QUEUE: 'many' }).map((p) => p.split(':', 1)[0]);
    expect(named).toEqual(expect.arrayContaining(['QUERY_HEAVY_QUEUE', 'AUTH_SECRET']));
  });

  it('stops the process once (exit 2) with all of them in one message, no stack', async () => {
    const result = spawnSync(process.execPath, [await builtEntry('main')], {
      env: { PATH: process.env.PATH, ...bad, DATABASE_URL: 'file:/nonexistent/never-opened.db' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(result.status).toBe(2);
    for (const name of ['PORT', 'RATE_LIMIT_MAX', 'WS_MAX_CONNECTIONS_PER_CLIENT', 'AUTH_SECRET', 'OAUTH_ACME_CLIENT_ID']) {
      expect(result.stderr).toContain(name);
    }
    expect(result.stderr.match(/Invalid configuration/g)).toHaveLength(1);
    expect(result.stderr).not.toMatch(/\n\s+at /);
  });
});
