import type { Redis } from 'ioredis';
import type { Db } from '../db/connect.js';
import type { DataVersion } from '../graphql/response-cache.js';

/**
 * The data version that result caches are checked against: it changes on every
 * committed write. One instance: the database's own change stamp. Several instances:
 * a counter in Redis that every instance bumps after each committed write (awaited,
 * so a write is acknowledged only once other instances can see it), combined with the
 * local stamp.
 */
export function localDataVersion(db: Db): DataVersion {
  return () => db.changeStamp();
}

export function sharedDataVersion(db: Db, client: Redis, key: string, onError: (error: unknown) => void): DataVersion {
  // A bump that failed (Redis down) is retried as soon as Redis is back, before other
  // instances can trust their caches again; while it is down they cannot read the
  // version, so they bypass their caches.
  let pendingBump = false;
  const bump = async () => {
    try {
      await client.incr(key);
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
      const shared = await client.get(key);
      return `${shared ?? '0'}:${db.changeStamp()}`;
    } catch (error) {
      onError(error);
      return undefined;
    }
  };
}
