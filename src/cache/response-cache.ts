import { LRUCache } from 'lru-cache';
import { EVERYTHING, type LocalVersions, type Version, type VersionStore } from './versions.js';
import { Recorder } from './recorder.js';
import { admits, CallerScope, isExcluded, levelsOf, ROLE, scopeKey, USER, type SharingCaller } from './sharing.js';

/**
 * Whole-response cache for queries (docs/decisions.md): the bytes of an error-free
 * result, valid while every tag its execution read (src/cache/reads.ts) keeps the
 * version recorded before the read, and keyed by what the execution read of the caller
 * (./sharing.ts). Memory versions are checked synchronously; with Redis one MGET per lookup.
 * A miss joins the same request of the same caller while it executes (`miss`).
 */

/**
 * A prepared operation: the same object for the same text (src/graphql/operation/pipeline.ts),
 * so it stands for its text in keys.
 */
export interface CacheableOperation {
  readonly operationType: string;
}

/** Carried from lookup to store: where a miss's result goes and what it depended on. */
export interface CacheSlot {
  readonly base: string;
  readonly scope: CallerScope;
  readonly recorder: Recorder;
  /** The requests that joined this execution (the same request of the same caller): answered by `store`, let go by `release`. */
  readonly joiners: Joiners;
}

type Answer = { body: Body; cost: number | undefined };

/** Requests waiting for a running execution's answer (docs/caching.md, "Joining an execution"). */
class Joiners {
  private waiting: { caller: SharingCaller; resolve: (answer: Answer | undefined) => void }[] | undefined;
  private settled = false;

  constructor(readonly joinKey: string) {}

  /**
   * Its answer for `caller`; undefined when it had none to share, or its execution came to
   * depend on more of its caller than `caller` shares (each such joiner then executes itself).
   * Asked only while it runs.
   */
  answer(caller: SharingCaller): Promise<Answer | undefined> {
    return new Promise((resolve) => (this.waiting ??= []).push({ caller, resolve }));
  }

  /** The first call counts; `scope`: what the execution depended on of its caller. */
  settle(answer: Answer | undefined, scope: CallerScope): void {
    if (this.settled) return;
    this.settled = true;
    for (const { caller, resolve } of this.waiting ?? []) resolve(answer && admits(scope, caller) ? answer : undefined);
    this.waiting = undefined;
  }
}

interface Entry {
  /**
   * The JSON text; its bytes when large (src/graphql/operation/cost-report.ts). Small
   * bodies stay strings: node:http writes one in one piece with the head, and a small hit
   * sent as a Buffer cost ~15 µs more (docs/decisions.md).
   */
  readonly body: Body;
  /** What its execution cost the caller (docs/limits.md, "Cost"): a hit is charged the same. */
  readonly cost: number | undefined;
  readonly tags: readonly string[];
  readonly versions: readonly Version[];
  /** Kept for a role: the users of it this answer is not for (./sharing.ts). */
  readonly excluded: ReadonlySet<string> | undefined;
  /** The local clock when the versions were last found current (memory only). */
  checkedAt: number;
}

/** A body as kept: JSON text, or its UTF-8 bytes. */
export type Body = string | Buffer;

export type Lookup = Answer | CacheSlot | undefined;

/**
 * An answer is kept at most 150 s from its store: with the entity cache's 150 s
 * (./entity-cache.ts) what it shows is at most the 300 s old docs/schema.md allows when a
 * write bypassed the versions (SQL run by hand on PostgreSQL). Each entry's lifetime is
 * drawn from the last 30 s of that, so answers a cold start stored together do not expire
 * together while still read and run again all at once (docs/decisions.md, "Response-cache
 * lifetimes").
 */
const MAX_AGE_MS = 150_000;
const AGE_SPREAD_MS = 30_000;

export class ResponseCache {
  private readonly entries: LRUCache<string, Entry>;
  /**
   * With Redis: the tags each operation and variables read last time, fetched with the next
   * lookup. Keyed by the client's variables, so bounded in bytes too (an eighth of the budget).
   */
  private readonly lastTags: LRUCache<string, readonly string[]>;
  /** Misses executing now, by caller and request (`joinKey`): as many as the requests under way, at most. */
  private readonly running = new Map<string, CacheSlot>();
  /** The newest of them for each request, whoever the caller (`base`): no more entries than `running`. */
  private readonly newest = new Map<string, CacheSlot>();
  private readonly operationIds = new WeakMap<CacheableOperation, string>();
  private nextOperationId = 0;
  /** Answers served from the cache (`served`), and lookups that had to execute (tests). */
  readonly stats = { hits: 0, misses: 0 };

  /** `clock`: the time entries' ages are measured in (tests). */
  constructor(
    private readonly versions: VersionStore,
    maxBytes: number,
    clock: { now(): number } = performance,
  ) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      ttl: MAX_AGE_MS,
      perf: clock,
      // Characters count twice: V8 keeps a string with any non-Latin-1 character in two bytes each.
      // Tags are counted at their length (an id in a tag is the client's), each with its version.
      sizeCalculation: (entry, key) => bodyBytes(entry.body) + key.length * 2 + tagsBytes(entry.tags) + idsBytes(entry.excluded) + 96,
    });
    this.lastTags = new LRUCache<string, readonly string[]>({
      max: 10_000,
      maxSize: Math.max(1024 * 1024, Math.floor(maxBytes / 8)),
      sizeCalculation: (tags, key) => key.length * 2 + tagsBytes(tags) + 96,
    });
  }

  /** The cached body on a hit; on a miss, the slot to execute with and fill; undefined when nothing may be cached now. */
  lookup(operation: CacheableOperation, variables: Record<string, unknown> | null | undefined, caller: SharingCaller): Lookup | Promise<Lookup> {
    if (operation.operationType !== 'query') return undefined;
    const base = `${this.operationId(operation)}\u0001${variables ? JSON.stringify(variables) : ''}`;
    const local = this.versions.local;
    return local ? this.lookupLocal(base, caller, local) : this.lookupShared(base, caller);
  }

  private lookupLocal(base: string, caller: SharingCaller, local: LocalVersions): Lookup | Promise<Lookup> {
    if (!local.check()) return undefined;
    for (const level of levelsOf(caller)) {
      const key = `${scopeKey(caller, level)}\u0001${base}`;
      const entry = this.entries.get(key);
      if (entry && !isExcluded(caller, entry.excluded) && this.isCurrent(entry, local, key)) return this.hit(entry);
    }
    return this.miss(base, caller, new Recorder((tag) => local.current(tag)), (tag) => local.current(tag));
  }

  /**
   * With Redis: one MGET fetches the versions of every candidate entry's tags and of the
   * tags this operation and variables read last time; a miss executes against that
   * snapshot and fetches anything else before reading it (./recorder.ts).
   */
  private async lookupShared(base: string, caller: SharingCaller): Promise<Lookup> {
    const fetched = new Set<Entry>();
    const wanted = new Set<string>([EVERYTHING]);
    for (const level of levelsOf(caller)) {
      const entry = this.entries.peek(`${scopeKey(caller, level)}\u0001${base}`);
      if (!entry || isExcluded(caller, entry.excluded)) continue;
      fetched.add(entry);
      for (const tag of entry.tags) wanted.add(tag);
    }
    for (const tag of this.lastTags.get(base) ?? []) wanted.add(tag);
    const tags = [...wanted];
    const versions = await this.versions.read(tags);
    if (!versions) return undefined;
    const snapshot = new Map<string, Version>();
    tags.forEach((tag, i) => snapshot.set(tag, versions[i]!));
    // The entries as they are now: one stored while the versions were fetched (the same
    // request, finishing meanwhile) is checked against them too.
    for (const level of levelsOf(caller)) {
      const key = `${scopeKey(caller, level)}\u0001${base}`;
      const entry = this.entries.get(key);
      if (!entry || isExcluded(caller, entry.excluded)) continue;
      if (entry.tags.every((tag, i) => snapshot.get(tag) === entry.versions[i])) return this.hit(entry);
      // Versions are random tokens: one that changed never comes back (an entry stored meanwhile may hold tags not fetched).
      if (fetched.has(entry)) this.entries.delete(key);
    }
    const recorder = new Recorder(
      (tag) => snapshot.get(tag),
      async (more) => this.versions.read(more),
    );
    return this.miss(base, caller, recorder, (tag) => snapshot.get(tag));
  }

  /**
   * A miss joins the same request while it executes, if everything that execution has read
   * so far is unchanged now (`versionNow`): its answer then holds data current while this
   * request was under way. The same caller's execution first; else the newest one of any
   * caller whose answer, by what it depended on of its caller so far, this caller may share,
   * as a stored answer would be shared (docs/caching.md, "Joining an execution").
   * Otherwise it executes, and others may join it.
   */
  private miss(base: string, caller: SharingCaller, recorder: Recorder, versionNow: (tag: string) => Version | undefined): Lookup | Promise<Lookup> {
    const joinKey = `${scopeKey(caller, USER)}\u0001${base}`;
    const slot: CacheSlot = { base, scope: new CallerScope(caller), recorder, joiners: new Joiners(joinKey) };
    const current = (running: CacheSlot | undefined): running is CacheSlot =>
      running !== undefined && running.recorder.tags.every((tag, i) => versionNow(tag) === running.recorder.versions[i]);
    let running = this.running.get(joinKey);
    if (!current(running)) {
      const other = this.newest.get(base);
      running = current(other) && admits(other.scope, caller) ? other : undefined;
    }
    if (running) {
      return running.joiners.answer(caller).then((answer) => {
        if (answer) return answer;
        this.stats.misses++;
        return slot;
      });
    }
    this.stats.misses++;
    // A newer execution: later requests join it (one whose reads moved on still answers its own joiners).
    this.running.set(joinKey, slot);
    this.newest.set(base, slot);
    return slot;
  }

  /**
   * Stores an error-free result under the key its execution earned, if all it read is
   * known to be unchanged since; `cost` is what the execution cost (its objects).
   */
  store(slot: CacheSlot, body: Body, cost?: number): void {
    this.settle(slot, { body, cost });
    const { recorder, scope } = slot;
    const local = this.versions.local;
    if (!local) this.lastTags.set(slot.base, recorder.tags);
    if (!recorder.complete) return;
    const excluded = scope.level === ROLE ? scope.excluded : undefined;
    const entry: Entry = { body: typeof body === 'string' ? flat(body) : body, cost, tags: recorder.tags, versions: recorder.versions, excluded, checkedAt: -1 };
    const key = `${scopeKey(scope.caller, scope.level)}\u0001${slot.base}`;
    // A write that committed during execution already made it old: not worth the space.
    if (local && !isCurrent(entry, local)) return;
    this.entries.set(key, entry, { ttl: MAX_AGE_MS - Math.random() * AGE_SPREAD_MS });
  }

  private isCurrent(entry: Entry, local: LocalVersions, key: string): boolean {
    if (isCurrent(entry, local)) return true;
    // Versions never come back: this entry can never be current again.
    this.entries.delete(key);
    return false;
  }

  /** A miss ended with nothing to store (errors, a refusal, no execution): whoever joined it executes itself. */
  release(slot: CacheSlot): void {
    this.settle(slot, undefined);
  }

  private settle(slot: CacheSlot, answer: Answer | undefined): void {
    const { joiners } = slot;
    if (this.running.get(joiners.joinKey) === slot) this.running.delete(joiners.joinKey);
    if (this.newest.get(slot.base) === slot) this.newest.delete(slot.base);
    joiners.settle(answer, slot.scope);
  }

  /** A hit was answered: a lookup's hit may still be refused, by a count made beside it (src/graphql/operation/core.ts). */
  served(): void {
    this.stats.hits++;
  }

  private hit(entry: Entry): Answer {
    return { body: entry.body, cost: entry.cost };
  }

  /** A short stand-in for the operation's text in keys: the prepared operation is the same object for the same text. */
  private operationId(operation: CacheableOperation): string {
    let id = this.operationIds.get(operation);
    if (id === undefined) {
      id = `o${++this.nextOperationId}`;
      this.operationIds.set(operation, id);
    }
    return id;
  }
}

/** A tag's characters, its slot in the list and its version (a number, or a random token with Redis). */
function tagsBytes(tags: readonly string[]): number {
  let bytes = 0;
  for (const tag of tags) bytes += tag.length * 2 + 64;
  return bytes;
}

/** The excluded users' ids, as tags are counted. */
function idsBytes(ids: ReadonlySet<string> | undefined): number {
  let bytes = 0;
  for (const id of ids ?? []) bytes += id.length * 2 + 64;
  return bytes;
}

/** In memory: every tag still at its recorded version (skipped while no bump happened since the last check). */
function isCurrent(entry: Entry, local: LocalVersions): boolean {
  const clock = local.clock;
  if (entry.checkedAt === clock) return true;
  const { tags, versions } = entry;
  for (let i = 0; i < tags.length; i++) {
    if (local.current(tags[i]!) !== versions[i]) return false;
  }
  entry.checkedAt = clock;
  return true;
}

/**
 * A copy that holds no other string alive: a result may be built from slices and
 * concatenations of larger strings (rows, the document), which a long-lived entry would pin.
 */
function flat(body: string): string {
  return Buffer.from(body, 'utf8').toString('utf8');
}

/** What a body holds: a string two bytes a character at most, bytes as they are. */
function bodyBytes(body: Body): number {
  return typeof body === 'string' ? body.length * 2 : body.length;
}
