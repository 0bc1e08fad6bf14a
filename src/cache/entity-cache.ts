import type { KeyValueStore } from '../store/kv.js';
import type { Version, VersionStore } from './versions.js';

/** What an entity cache is told of its entities: where, what they depend on, how to load them. */
export interface EntityKind<T> {
  /** The key prefix of its entries in the store (`post` → `post:<id>`). */
  readonly name: string;
  /** The tags an entity's entry depends on (./reads.ts), `*` included. */
  tagsOf(id: string): readonly string[];
  /** Loads entities from the database, by id; missing ones are absent. */
  load(ids: readonly string[]): Promise<Map<string, T>>;
  /** True for a stored value that is a whole entity (anything else is a miss). */
  isEntity(value: unknown): value is T;
}

interface Entry<T> {
  /** The versions of the entry's tags when the database read began. */
  v: Version[];
  e: T;
}

/**
 * Half of the 300 s an answer may be served from caches (docs/schema.md, "Caching"): a
 * whole response built from an entry is kept at most the other half (./response-cache.ts).
 */
const ENTRY_TTL_MS = 150_000;

/**
 * Entities by id, in the shared store: up to 150 s old, never stale after a write
 * (docs/caching.md, "The rule").
 *
 * Its entries carry the versions of their tags (./versions.ts), taken BEFORE the
 * database read; writers bump the tags AFTER commit (src/domain/*.ts). A read that
 * raced a write therefore stores its (possibly old) entity under versions no later read
 * accepts. The response cache depends on the same tags, so one bump invalidates both.
 *
 * When the store fails (Redis down) or the versions cannot be known, the cache is
 * bypassed: reads go to the database and writes still succeed (degradation, not failure).
 */
export class EntityCache<T> {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly versions: VersionStore,
    private readonly kind: EntityKind<T>,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** The entity, from the cache when the entry is current. */
  async get(id: string): Promise<T | null> {
    return (await this.getMany([id]))[0]!;
  }

  /**
   * In input order, null where missing: one versions read and one entries read for all,
   * and one database read for the posts whose entries are missing or old.
   */
  async getMany(ids: readonly string[]): Promise<(T | null)[]> {
    const tagList = [...new Set(ids.flatMap((id) => this.kind.tagsOf(id)))];
    let current: Version[] | undefined;
    let raws: (string | undefined)[];
    try {
      [current, raws] = await Promise.all([this.versions.read(tagList), this.kv.getMany(ids.map((id) => this.key(id)))]);
    } catch (err) {
      this.onError(err);
      return this.loadInOrder(ids);
    }
    if (!current) return this.loadInOrder(ids);
    const known = new Map(tagList.map((tag, i) => [tag, current[i]!]));
    const found: (T | null)[] = [];
    const stale = new Map<string, Version[]>();
    ids.forEach((id, i) => {
      const versions = this.kind.tagsOf(id).map((tag) => known.get(tag)!);
      const raw = raws[i];
      const entry = raw === undefined ? undefined : this.parse(raw);
      if (entry && sameVersions(entry.v, versions)) found[i] = entry.e;
      else stale.set(id, versions);
    });
    if (stale.size === 0) return found;
    const fresh = await this.readThrough(stale);
    return ids.map((id, i) => found[i] ?? fresh.get(id) ?? null);
  }

  /**
   * Reads the database and stores each entity under its `versions`, those seen BEFORE this
   * read began. Public so tests can replay a read that started before a write.
   * Missing entities are not cached: ids are random, so a negative entry would rarely be
   * asked for again, and an attacker could fill the store with them.
   */
  async readThrough(versionsById: ReadonlyMap<string, Version[]>): Promise<Map<string, T>> {
    const fresh = await this.kind.load([...versionsById.keys()]);
    // Not awaited: the reader has its entities, and waiting for the store would add a
    // Redis round trip to every miss. A later read of the entry is sent after it on the
    // same connection (src/store/redis-turn.ts); one it misses reads the database again.
    for (const [id, e] of fresh) {
      const entry: Entry<T> = { v: versionsById.get(id)!, e };
      this.kv.set(this.key(id), JSON.stringify(entry), ENTRY_TTL_MS).catch(this.onError);
    }
    return fresh;
  }

  private async loadInOrder(ids: readonly string[]): Promise<(T | null)[]> {
    const fresh = await this.kind.load(ids);
    return ids.map((id) => fresh.get(id) ?? null);
  }

  /** The versions an entry for the entity would be stored under now (tests replay races with them). */
  async currentVersions(id: string): Promise<Version[] | undefined> {
    return this.versions.read(this.kind.tagsOf(id));
  }

  private key(id: string): string {
    return `${this.kind.name}:${id}`;
  }

  private parse(raw: string): Entry<T> | undefined {
    try {
      const value = JSON.parse(raw) as Partial<Entry<T>> | null;
      if (value && Array.isArray(value.v) && this.kind.isEntity(value.e)) return value as Entry<T>;
    } catch {
      // A corrupt entry is a miss; the next read overwrites it.
    }
    return undefined;
  }
}

function sameVersions(a: readonly Version[], b: readonly Version[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
