import { randomBytes } from 'node:crypto';
import type { KeyValueStore } from '../store/kv.js';
import type { Post } from './types.js';

/** What one cache entry holds: the post row and its like count, so `post(id) { likes }` needs no query. */
export interface PostWithLikes {
  post: Post;
  likes: number;
}

/** Loads a post with its like count from the database; null when it does not exist. */
export type PostLoader = (id: string) => Promise<PostWithLikes | null>;

interface Entry extends PostWithLikes {
  /** The version key's value when the database read began. */
  v: string;
}

const ENTRY_TTL_MS = 300_000;
// Versions are random, never reused: when a version key expires or is evicted (an LRU,
// Redis under maxmemory), the next reader claims a fresh one that no old entry carries.
const VERSION_TTL_MS = 600_000;
const newVersion = () => randomBytes(9).toString('base64url');

const entryKey = (id: string) => `post:${id}`;
const versionKey = (id: string) => `post-version:${id}`;

/**
 * The `post(id)` cache: up to 300 s old, never stale after a write.
 *
 * Versioning makes it race-free: a reader records the version BEFORE it reads the
 * database and stores the entry under that version; a writer replaces the version with
 * a new random one AFTER its transaction commits. A reader that raced a write therefore
 * stores its (possibly old) row under the old version, which no later read accepts.
 * A reader that finds no version claims one with set-if-absent before reading; if a
 * writer got there first it reads without caching. Deleting the entry on invalidation
 * merely frees the space early.
 *
 * When the store fails (Redis down) the cache is bypassed: reads go to the database and
 * writes still succeed; SPEC section 1 wants degradation, not failure.
 */
export class PostCache {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly load: PostLoader,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** The post with its like count, from the cache when the entry is current. */
  async get(id: string): Promise<PostWithLikes | null> {
    let found: (string | undefined)[];
    try {
      found = await this.kv.getMany([entryKey(id), versionKey(id)]);
    } catch (err) {
      this.onError(err);
      return this.load(id);
    }
    const [raw, version] = found;
    if (version === undefined) return this.claimAndRead(id);
    const entry = raw === undefined ? undefined : parseEntry(raw);
    if (entry && entry.v === version) return { post: entry.post, likes: entry.likes };
    return this.readThrough(id, version);
  }

  private async claimAndRead(id: string): Promise<PostWithLikes | null> {
    const version = newVersion();
    let claimed: boolean;
    try {
      claimed = await this.kv.setIfAbsent(versionKey(id), version, VERSION_TTL_MS);
    } catch (err) {
      this.onError(err);
      claimed = false;
    }
    return claimed ? this.readThrough(id, version) : this.load(id);
  }

  /**
   * Reads the database and stores the result under `version`, the version seen BEFORE
   * this read began. Public so tests can replay a read that started before a write.
   * Missing posts are not cached: ids are random, so a negative entry would rarely be
   * asked for again, and an attacker could fill the store with them.
   */
  async readThrough(id: string, version: string): Promise<PostWithLikes | null> {
    const fresh = await this.load(id);
    if (fresh) {
      const entry: Entry = { v: version, post: fresh.post, likes: fresh.likes };
      try {
        await this.kv.set(entryKey(id), JSON.stringify(entry), ENTRY_TTL_MS);
      } catch (err) {
        this.onError(err);
      }
    }
    return fresh;
  }

  /** Call AFTER the write's transaction has committed (earlier, a reader could re-cache the old row). */
  async invalidate(ids: Iterable<string>): Promise<void> {
    const unique = [...new Set(ids)];
    await Promise.all(
      unique.map(async (id) => {
        try {
          await this.kv.set(versionKey(id), newVersion(), VERSION_TTL_MS);
          await this.kv.delete(entryKey(id));
        } catch (err) {
          // The write has committed; failing the request now would report a success as
          // an error. An entry that survives an outage expires within its TTL.
          this.onError(err);
        }
      }),
    );
  }
}

function parseEntry(raw: string): Entry | undefined {
  try {
    const value = JSON.parse(raw) as Partial<Entry> | null;
    if (value && typeof value.v === 'string' && value.post && typeof value.likes === 'number') return value as Entry;
  } catch {
    // A corrupt entry is a miss; the next read overwrites it.
  }
  return undefined;
}
