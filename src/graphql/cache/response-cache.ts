import { LRUCache } from 'lru-cache';
import type { Caller } from '../../domain/caller.js';
import type { DataVersion } from '../../store/data-version.js';
import type { PreparedOperation } from '../operation/pipeline.js';

/**
 * Whole-response cache for queries: the serialized body of an error-free result, keyed
 * by (operation, variables, caller) and valid only while the data version it was made
 * under is still current. The version changes on every committed write (see
 * src/db/write-tracking.ts), so a cached response is never stale; it is the one road
 * past executing and serializing a large result on every request (DESIGN.md).
 *
 * The caller is part of the key because field rules depend on it (`User.email`,
 * unpublished posts, `me`); the role is in it because it is re-read per request.
 */

export interface CacheSlot {
  key: string;
  version: string;
}

interface Entry {
  version: string;
  /** The UTF-8 bytes: a hit is written to the socket as is, with no encoding pass. */
  body: Buffer;
}

export class ResponseCache {
  private readonly entries: LRUCache<string, Entry>;
  /** Lookups answered from the cache, and lookups that had to execute (metrics, tests). */
  readonly stats = { hits: 0, misses: 0 };

  constructor(
    private readonly dataVersion: DataVersion,
    maxBytes: number,
  ) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      // Not needed for correctness (the version is); it bounds the damage of an
      // invalidation lost while Redis flapped, and frees memory of idle entries. The
      // same 300 s that SPEC allows the post(id) cache.
      ttl: 300_000,
      sizeCalculation: (entry, key) => entry.body.length + key.length * 2 + 64,
    });
  }

  /**
   * Looks the operation up. Returns the cached body on a hit, or the slot to fill after
   * execution on a miss; undefined when the response must not be cached at all.
   */
  async lookup(
    operation: PreparedOperation,
    variables: Record<string, unknown> | null | undefined,
    caller: Caller,
  ): Promise<{ body: Buffer } | CacheSlot | undefined> {
    if (operation.operationType !== 'query') return undefined;
    const version = await this.dataVersion();
    if (version === undefined) return undefined;
    const key = `${callerKey(caller)}\u0001${variables ? JSON.stringify(variables) : ''}\u0001${operation.key}`;
    const body = this.current(key, version);
    if (body) {
      this.stats.hits++;
      return { body };
    }
    this.stats.misses++;
    return { key, version };
  }

  private current(key: string, version: string): Buffer | undefined {
    const entry = this.entries.get(key);
    return entry && entry.version === version ? entry.body : undefined;
  }

  /** Stores a body under the version read BEFORE execution began, so a racing write wins. */
  store(slot: CacheSlot, body: string): void {
    // Outside Node's shared 8 KiB pool: a small pooled slice would keep its whole slab alive.
    const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(body));
    bytes.write(body);
    this.entries.set(slot.key, { version: slot.version, body: bytes });
  }
}

function callerKey(caller: Caller): string {
  return caller.kind === 'user' ? `u:${caller.id}:${caller.role}` : 'a';
}
