import type { Db } from '../db/connect.js';
import type { PubSub } from '../realtime/pubsub.js';
import type { KeyValueStore } from '../store/kv.js';
import type { VersionStore } from '../cache/versions.js';

/** What services need from the outside world; chosen once in app.ts from configuration. */
export interface DomainDeps {
  db: Db;
  kv: KeyValueStore;
  pubsub: PubSub;
  /** Versions of what cached results depend on: writes bump them after commit (src/cache/reads.ts). */
  versions: VersionStore;
}
