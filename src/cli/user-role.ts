/**
 * Operator task: `npm run user:role -- <email> <role>` sets the role of an existing
 * account in the configured database (the way to make the first admin). Compiled into
 * dist/cli/ and started by scripts/run-built.mjs, so it runs on a production install.
 *
 * Exit codes: 0 done; 1 a usage problem (missing argument, unknown email, invalid
 * role, database failure); 2 invalid configuration. Messages are one line, no stack.
 */
import { ConfigError, loadConfig } from '../config.js';
import { createBackends, type Backends } from '../backends.js';
import { migrateToLatest } from '../db/migrate.js';
import { ROLES } from '../domain/caller.js';
import { UserService } from '../domain/users.js';
import { checkRole } from '../domain/validate.js';
import { BadUserInputError, NotFoundError } from '../errors.js';

const USAGE = `Usage: npm run user:role -- <email> <role>   (role: ${ROLES.join(', ')})`;

function fail(message: string, code: number): never {
  process.stderr.write(`${message}\n`);
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  const [email, role] = argv;
  if (!email || !role) fail(`Missing argument. ${USAGE}`, 1);

  // Before touching the database: a typo in the role needs no connection.
  try {
    checkRole(role);
  } catch {
    fail(`Invalid role "${role}": expected one of ${ROLES.join(', ')}`, 1);
  }

  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message, 2);
    throw err;
  }

  let backends: Backends | undefined;
  let outcome: { message: string; code: number };
  try {
    // The configured backends, not a bare connection: with REDIS_URL the write is
    // announced to running instances (their result caches must not serve the old role).
    backends = createBackends({ ...config, logLevel: 'silent' });
    await backends.ready();
    await migrateToLatest(backends.db);
    const users = new UserService(backends);
    const user = await users.setRole(email, role);
    outcome = { message: `${user.email ?? email} is now ${user.role}`, code: 0 };
  } catch (err) {
    const message =
      err instanceof NotFoundError
        ? `No account with the email ${email}`
        : err instanceof BadUserInputError
          ? `Invalid role "${role}": expected one of ${ROLES.join(', ')}`
          : `Could not set the role: ${firstLine(err)}`;
    outcome = { message, code: 1 };
  }
  // Closed before exiting: process.exit would skip a `finally`, and SQLite should checkpoint cleanly.
  await backends?.close().catch(() => {});
  if (outcome.code !== 0) fail(outcome.message, outcome.code);
  process.stdout.write(`${outcome.message}\n`);
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}

await main(process.argv.slice(2));
