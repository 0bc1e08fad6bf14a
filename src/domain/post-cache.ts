import type { KeyValueStore } from '../store/kv.js';
import { EVERYTHING, type Version, type VersionStore } from '../store/versions.js';
import { tags } from './reads.js';
import type { Post } from './types.js';

/** What one cache entry holds: the post row and its like count, so `post(id) { likes }` needs no query. */
export interface PostWithLikes {
  post: Post;
  likes: number;
}

/** Loads posts with their like counts from the database, by id; missing posts are absent. */
export type PostLoader = (ids: readonly string[]) => Promise<Map<string, PostWithLikes>>;

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
    return (await this.getMany([id]))[0]!;
  }

  /**
   * In input order, null where missing: one versions read and one entries read for all,
   * and one database read for the posts whose entries are missing or old.
   */
  async getMany(ids: readonly string[]): Promise<(PostWithLikes | null)[]> {
    const tagList = [...new Set(ids.flatMap(tagsOf))];
    let current: Version[] | undefined;
    let raws: (string | undefined)[];
    try {
      [current, raws] = await Promise.all([this.versions.read(tagList), this.kv.getMany(ids.map(entryKey))]);
    } catch (err) {
      this.onError(err);
      return this.loadInOrder(ids);
    }
    if (!current) return this.loadInOrder(ids);
    const known = new Map(tagList.map((tag, i) => [tag, current[i]!]));
    const found: (PostWithLikes | null)[] = [];
    const stale = new Map<string, Version[]>();
    ids.forEach((id, i) => {
      const versions = tagsOf(id).map((tag) => known.get(tag)!);
      const raw = raws[i];
      const entry = raw === undefined ? undefined : parseEntry(raw);
      if (entry && sameVersions(entry.v, versions)) found[i] = { post: entry.post, likes: entry.likes };
      else stale.set(id, versions);
    });
    if (stale.size === 0) return found;
    const fresh = await this.readThrough(stale);
    return ids.map((id, i) => found[i] ?? fresh.get(id) ?? null);
  }

  /**
   * Reads the database and stores each post under its `versions`, those seen BEFORE this
   * read began. Public so tests can replay a read that started before a write.
   * Missing posts are not cached: ids are random, so a negative entry would rarely be
   * asked for again, and an attacker could fill the store with them.
   */
  async readThrough(versionsById: ReadonlyMap<string, Version[]>): Promise<Map<string, PostWithLikes>> {
    const fresh = await this.load([...versionsById.keys()]);
    await Promise.all(
      [...fresh].map(([id, { post, likes }]) => {
        const entry: Entry = { v: versionsById.get(id)!, post, likes };
        return this.kv.set(entryKey(id), JSON.stringify(entry), ENTRY_TTL_MS).catch(this.onError);
      }),
    );
    return fresh;
  }

  private async loadInOrder(ids: readonly string[]): Promise<(PostWithLikes | null)[]> {
    const fresh = await this.load(ids);
    return ids.map((id) => fresh.get(id) ?? null);
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
