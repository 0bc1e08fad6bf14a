import { randomBytes } from 'node:crypto';
import type { KeyValueStore } from '../store/kv.js';

/**
 * One version per tag (src/cache/reads.ts) for the result caches (docs/decisions.md,
 * "exact, fine-grained caching"). Readers take versions BEFORE reading the data, writers
 * bump AFTER commit and await it, so a result is kept under versions no later than its
 * data, and a write is acknowledged only once every reader can see its bump.
 * In one process the versions live in memory; with Redis they are shared by instances.
 */
export type Version = number | string;

/** The tag every cached result depends on: bumped for writes that cannot be told apart. */
export const EVERYTHING = '*';

export interface VersionStore {
  /** The tags' current versions, in order; undefined while they cannot be known (nothing may be cached or served then). */
  read(tags: readonly string[]): Version[] | undefined | Promise<Version[] | undefined>;
  /** New versions for the tags. Call after the write committed; a failure is absorbed (the write stands). */
  bump(tags: readonly string[]): Promise<void>;
  /** Present when the versions live in this process: then a read records the version right before it queries. */
  readonly local: LocalVersions | undefined;
}

/** Polls for writes by other processes (Db.externalChanges); undefined when a turn cannot tell. */
export type ExternalPoll = () => number | undefined;

/**
 * In memory: counters, as nothing outside this process keeps them. Only bumped tags are
 * stored; any other reads as `floor`. Past `maxTags` the least recently bumped tag is
 * dropped and the floor rises to its version, which only makes older records of
 * unbumped tags look changed (a miss, never a stale hit).
 */
export class LocalVersions implements VersionStore {
  private readonly versions = new Map<string, number>();
  private floor = 0;
  private bumps = 0;
  private lastExternal: number | undefined;

  constructor(
    private readonly external?: ExternalPoll,
    private readonly maxTags = 200_000,
  ) {}

  get local(): LocalVersions {
    return this;
  }

  /** True when writes by other processes reach these versions (SQLite's file watch); PostgreSQL's do not without Redis. */
  get seesOtherProcesses(): boolean {
    return this.external !== undefined;
  }

  /** Moves with every bump: a result checked at this clock is still valid while it has not moved. */
  get clock(): number {
    return this.bumps;
  }

  /**
   * Looks for commits by other processes (once per event-loop turn, see
   * src/cache/external-changes.ts) and bumps everything when there were; false when this
   * turn cannot tell, and then nothing may be served.
   */
  check(): boolean {
    if (!this.external) return true;
    const seen = this.external();
    if (seen === undefined) return false;
    if (seen !== this.lastExternal) {
      this.lastExternal = seen;
      this.bumpNow([EVERYTHING]);
    }
    return true;
  }

  current(tag: string): number {
    return this.versions.get(tag) ?? this.floor;
  }

  read(tags: readonly string[]): number[] | undefined {
    if (!this.check()) return undefined;
    return tags.map((tag) => this.current(tag));
  }

  async bump(tags: readonly string[]): Promise<void> {
    this.bumpNow(tags);
  }

  bumpNow(tags: readonly string[]): void {
    for (const tag of tags) {
      // Re-inserted, so the map's first entry is always the least recently bumped.
      this.versions.delete(tag);
      this.versions.set(tag, ++this.bumps);
    }
    while (this.versions.size > this.maxTags) {
      const [oldest, version] = this.versions.entries().next().value as [string, number];
      this.versions.delete(oldest);
      this.floor = version;
    }
  }
}

/** How long a version key lives in Redis; a lost one is claimed afresh (a miss, never a stale hit). */
const VERSION_TTL_MS = 3_600_000;
/**
 * A version no other bump or instance ever had: this process's random prefix and a
 * count. `randomBytes` on each bump cost ~7 µs of CPU on our VM (a system call each),
 * a write bumps several tags (docs/decisions.md, "Version tokens").
 */
const PROCESS_NONCE = randomBytes(9).toString('base64url');
let bumps = 0;
const newVersion = () => `${PROCESS_NONCE}.${(++bumps).toString(36)}`;
const versionKey = (tag: string) => `v:${tag}`;

/**
 * In the shared store (Redis through `CacheStore`): tokens unique to a bump (`newVersion`),
 * never counters kept in Redis, so a Redis that lost its data cannot bring back a version
 * an old entry was stored under;
 * a missing key is claimed with set-if-absent. A bump that fails is replayed by the
 * store when Redis is back, and reads of that key bypass until then
 * (src/store/resilient.ts); while Redis is down nothing can be read, so nothing is
 * cached or served.
 */
export class SharedVersions implements VersionStore {
  readonly local = undefined;
  private lastExternal: number | undefined;
  private externalBump: Promise<void> | undefined;

  constructor(
    private readonly kv: KeyValueStore,
    private readonly onError: (error: unknown) => void,
    private readonly external?: ExternalPoll,
  ) {}

  async read(tags: readonly string[]): Promise<Version[] | undefined> {
    if (this.external) {
      const seen = this.external();
      if (seen === undefined) return undefined;
      if (seen !== this.lastExternal) {
        this.lastExternal = seen;
        this.externalBump = this.bump([EVERYTHING]);
      }
      await this.externalBump;
    }
    try {
      const found = await this.kv.getMany(tags.map(versionKey));
      if (!found.includes(undefined)) return found as string[];
      const versions = await Promise.all(found.map((version, i) => version ?? this.claim(tags[i]!)));
      return versions.includes(undefined) ? undefined : (versions as string[]);
    } catch (error) {
      this.onError(error);
      return undefined;
    }
  }

  async bump(tags: readonly string[]): Promise<void> {
    // Sent together: one round trip with ioredis's auto-pipelining.
    await Promise.all(tags.map((tag) => this.kv.set(versionKey(tag), newVersion(), VERSION_TTL_MS).catch(this.onError)));
  }

  /** A tag nobody bumped or read lately: a fresh token, unless another reader or a writer set one first. */
  private async claim(tag: string): Promise<string | undefined> {
    const fresh = newVersion();
    if (await this.kv.setIfAbsent(versionKey(tag), fresh, VERSION_TTL_MS)) return fresh;
    return this.kv.get(versionKey(tag));
  }
}
