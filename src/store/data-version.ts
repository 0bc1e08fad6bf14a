import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Db } from '../db/connect.js';

/**
 * The data version that result caches are checked against: it changes on every
 * committed write. One instance: the database's own change stamp. Several instances:
 * a token in Redis that every instance replaces after each committed write (awaited,
 * so a write is acknowledged only once other instances can see it), combined with the
 * local stamp.
 */
/** The current data version; undefined when it cannot be known (then nothing is cached). */
export type DataVersion = () => string | undefined | Promise<string | undefined>;

export function localDataVersion(db: Db): DataVersion {
  return () => db.changeStamp();
}

export function sharedDataVersion(db: Db, client: Redis, key: string, onError: (error: unknown) => void): DataVersion {
  // A bump that failed (Redis down) is retried as soon as Redis is back, before other
  // instances can trust their caches again; while it is down they cannot read the
  // version, so they bypass their caches.
  let pendingBump = false;
  // A random token, not INCR: a counter restarts at 0 when Redis loses its data, and
  // would then come back to a value another instance cached under (stale hits).
  const bump = async () => {
    try {
      await client.set(key, randomBytes(9).toString('base64url'));
      pendingBump = false;
    } catch (error) {
      pendingBump = true;
      onError(error);
    }
  };
  client.on('ready', () => {
    if (pendingBump) void bump();
  });
  db.onCommittedWrite(bump);

  return async () => {
    if (pendingBump || client.status !== 'ready') return undefined;
    try {
      let shared = await client.get(key);
      if (shared === null) {
        // Lost (Redis restarted empty) or never set: claim a fresh token. A fixed
        // placeholder such as '0' would come back after a loss and match old entries.
        const fresh = randomBytes(9).toString('base64url');
        shared = (await client.set(key, fresh, 'NX')) === 'OK' ? fresh : await client.get(key);
        if (shared === null) return undefined;
      }
      return `${shared}:${db.changeStamp()}`;
    } catch (error) {
      onError(error);
      return undefined;
    }
  };
}
