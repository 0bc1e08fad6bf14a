import { LRUCache } from 'lru-cache';
import { tags } from './reads.js';
import { EVERYTHING, type LocalVersions } from './versions.js';

/**
 * Live sessions lately looked up, so a signed-in request does not read its session row
 * every time (docs/decisions.md, "session reads"). An entry stands while the versions of
 * everything it was read from are unchanged: the session (bumped when it is revoked),
 * its user (bumped by every change to the user, deletion included) and `EVERYTHING`
 * (writes by another process on the SQLite file). Versions are taken before the read,
 * as the response cache takes them. Only on SQLite, whose in-process versions see
 * other processes' writes: with Redis the versions would cost a round trip, as much as
 * the read itself, and PostgreSQL without Redis cannot see other processes' writes.
 */

interface Entry<T> {
  readonly value: T;
  readonly versions: readonly [number, number, number];
}

export class SessionMemo<T> {
  private readonly entries = new LRUCache<string, Entry<T>>({ max: 10_000 });

  constructor(private readonly versions: LocalVersions) {}

  /** The remembered value while nothing it depends on changed; undefined otherwise. */
  get(sessionId: string, userId: string): T | undefined {
    const entry = this.entries.get(sessionId);
    if (!entry) return undefined;
    const now = this.current(sessionId, userId);
    if (now && now.every((version, i) => version === entry.versions[i])) return entry.value;
    this.entries.delete(sessionId);
    return undefined;
  }

  /** Versions to remember a read under: call right BEFORE the read. Undefined when this turn cannot tell. */
  before(sessionId: string, userId: string): readonly [number, number, number] | undefined {
    return this.current(sessionId, userId);
  }

  remember(sessionId: string, versions: readonly [number, number, number], value: T): void {
    this.entries.set(sessionId, { value, versions });
  }

  private current(sessionId: string, userId: string): [number, number, number] | undefined {
    const local = this.versions;
    if (!local.check()) return undefined;
    return [local.current(EVERYTHING), local.current(tags.session(sessionId)), local.current(tags.user(userId))];
  }
}
