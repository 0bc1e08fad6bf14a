import type { KeyValueStore } from '../store/kv.js';
import { EVERYTHING, type Version, type VersionStore } from '../store/versions.js';
import { tags } from './reads.js';
import type { Post } from './types.js';

/** What one cache entry holds: the post row and its like count, so `post(id) { likes }` needs no query. */
export interface PostWithLikes {
  post: Post;
  likes: number;
}

/** Loads a post with its like count from the database; null when it does not exist. */
export type PostLoader = (id: string) => Promise<PostWithLikes | null>;

interface Entry extends PostWithLikes {
  /** The versions of the entry's tags when the database read began. */
  v: Version[];
}

const ENTRY_TTL_MS = 300_000;
const entryKey = (id: string) => `post:${id}`;
/** What an entry holds: the post's row and its like count, and everything (writes nobody announced). */
const tagsOf = (id: string) => [EVERYTHING, tags.post(id), tags.reactions(id)];

/**
 * The `post(id)` cache: up to 300 s old, never stale after a write.
 *
 * Its entries carry the versions of their tags (src/store/versions.ts), taken BEFORE
 * the database read; writers bump the tags AFTER commit (src/domain/*.ts). A read that
 * raced a write therefore stores its (possibly old) row under versions no later read
 * accepts. The response cache depends on the same tags, so one bump invalidates both.
 *
 * When the store fails (Redis down) or the versions cannot be known, the cache is
 * bypassed: reads go to the database and writes still succeed (degradation, not failure).
 */
export class PostCache {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly versions: VersionStore,
    private readonly load: PostLoader,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** The post with its like count, from the cache when the entry is current. */
  async get(id: string): Promise<PostWithLikes | null> {
    let current: Version[] | undefined;
    let raw: string | undefined;
    try {
      [current, raw] = await Promise.all([this.versions.read(tagsOf(id)), this.kv.get(entryKey(id))]);
    } catch (err) {
      this.onError(err);
      return this.load(id);
    }
    if (!current) return this.load(id);
    const entry = raw === undefined ? undefined : parseEntry(raw);
    if (entry && sameVersions(entry.v, current)) return { post: entry.post, likes: entry.likes };
    return this.readThrough(id, current);
  }

  /**
   * Reads the database and stores the result under `versions`, those seen BEFORE this
   * read began. Public so tests can replay a read that started before a write.
   * Missing posts are not cached: ids are random, so a negative entry would rarely be
   * asked for again, and an attacker could fill the store with them.
   */
  async readThrough(id: string, versions: Version[]): Promise<PostWithLikes | null> {
    const fresh = await this.load(id);
    if (fresh) {
      const entry: Entry = { v: versions, post: fresh.post, likes: fresh.likes };
      try {
        await this.kv.set(entryKey(id), JSON.stringify(entry), ENTRY_TTL_MS);
      } catch (err) {
        this.onError(err);
      }
    }
    return fresh;
  }

  /** The versions an entry for the post would be stored under now (tests replay races with them). */
  async currentVersions(id: string): Promise<Version[] | undefined> {
    return this.versions.read(tagsOf(id));
  }
}

function sameVersions(a: readonly Version[], b: readonly Version[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function parseEntry(raw: string): Entry | undefined {
  try {
    const value = JSON.parse(raw) as Partial<Entry> | null;
    if (value && Array.isArray(value.v) && value.post && typeof value.likes === 'number') return value as Entry;
  } catch {
    // A corrupt entry is a miss; the next read overwrites it.
  }
  return undefined;
}
