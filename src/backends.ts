import type { Config } from './config.js';
import { connectDatabase, type Db } from './db/connect.js';
import { MemoryPubSub } from './realtime/memory.js';
import type { PubSub } from './realtime/pubsub.js';
import type { KeyValueStore } from './store/kv.js';
import { MemoryStore } from './store/memory.js';

/**
 * The one place that picks implementations from configuration. Everything else sees
 * only the interfaces, so the core never branches on which backend it has.
 */
export interface Backends {
  db: Db;
  kv: KeyValueStore;
  pubsub: PubSub;
  close(): Promise<void>;
}

export function createBackends(config: Config): Backends {
  const db = connectDatabase(config.database);
  const kv = new MemoryStore();
  const pubsub = new MemoryPubSub();
  return {
    db,
    kv,
    pubsub,
    async close() {
      await pubsub.close();
      await kv.close();
      await db.close();
    },
  };
}
