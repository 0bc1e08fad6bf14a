import { describe, expect, it } from 'vitest';
import type { KeyValueStore } from '../../src/store/kv.js';
import { MemoryStore } from '../../src/store/memory.js';
import { EVERYTHING, LocalVersions, SharedVersions } from '../../src/cache/versions.js';

/**
 * The version stores (src/cache/versions.ts): a bump changes exactly the tags bumped; a
 * version never comes back once changed (in memory: counters and a rising floor; shared:
 * random tokens, a lost key claimed afresh); commits of other processes bump everything;
 * while versions cannot be known, reads answer undefined.
 */
describe('LocalVersions', () => {
  it('a bump changes the bumped tags only, and moves the clock', async () => {
    const versions = new LocalVersions();
    const [a, b] = versions.read(['a', 'b'])!;
    const clock = versions.clock;
    await versions.bump(['a']);
    expect(versions.current('a')).not.toBe(a);
    expect(versions.current('b')).toBe(b);
    expect(versions.clock).not.toBe(clock);
  });

  it('past maxTags the oldest bump is dropped and the floor rises: old records look changed, never current', async () => {
    const versions = new LocalVersions(undefined, 2);
    const never = versions.current('never-bumped');
    await versions.bump(['a']);
    const a = versions.current('a');
    await versions.bump(['b']);
    await versions.bump(['c']); // drops 'a'
    expect(versions.current('a')).toBe(a); // unchanged since: still current (the floor is its version)
    await versions.bump(['d']); // drops 'b'
    expect(versions.current('a')).not.toBe(a);
    expect(versions.current('never-bumped')).not.toBe(never);
  });

  it("another process's commit bumps everything; a turn that cannot tell reads nothing", () => {
    let external: number | undefined = 0;
    const versions = new LocalVersions(() => external);
    const [all, tag] = versions.read([EVERYTHING, 't'])!;
    expect(versions.read([EVERYTHING, 't'])).toEqual([all, tag]);
    external = 1;
    const [allAfter, tagAfter] = versions.read([EVERYTHING, 't'])!;
    expect(allAfter).not.toBe(all);
    expect(tagAfter).toBe(tag);
    external = undefined;
    expect(versions.check()).toBe(false);
    expect(versions.read(['t'])).toBeUndefined();
  });
});

describe('SharedVersions (the code that runs over Redis, here over the in-memory store)', () => {
  it('claims a token for a tag nobody set, keeps it until a bump, never reuses one', async () => {
    const kv = new MemoryStore();
    const versions = new SharedVersions(kv, () => {});
    const [first] = (await versions.read(['t']))!;
    expect(typeof first).toBe('string');
    expect(await versions.read(['t'])).toEqual([first]);
    await versions.bump(['t']);
    const [second] = (await versions.read(['t']))!;
    expect(second).not.toBe(first);
    // Lost (expired, evicted, Redis restarted empty): claimed afresh, not a value seen before.
    await kv.delete('v:t');
    const [third] = (await versions.read(['t']))!;
    expect([first, second]).not.toContain(third);
  });

  it('instances sharing the store see each other’s bumps', async () => {
    const kv = new MemoryStore();
    const a = new SharedVersions(kv, () => {});
    const b = new SharedVersions(kv, () => {});
    const before = await b.read(['t', 'u']);
    await a.bump(['t']);
    const after = (await b.read(['t', 'u']))!;
    expect(after[0]).not.toBe(before![0]);
    expect(after[1]).toBe(before![1]);
  });

  it("another process's commit on the SQLite file bumps everything, shared, before the read answers", async () => {
    const kv = new MemoryStore();
    let external = 0;
    const watcher = new SharedVersions(kv, () => {}, () => external);
    const other = new SharedVersions(kv, () => {});
    const [all] = (await other.read([EVERYTHING]))!;
    await watcher.read(['t']);
    external = 1;
    const [seen] = (await watcher.read([EVERYTHING]))!;
    expect(seen).not.toBe(all);
    expect(await other.read([EVERYTHING])).toEqual([seen]);
  });

  it('a failing store: reads answer undefined (nothing cached or served), bumps report and do not throw', async () => {
    const errors: unknown[] = [];
    const down = () => Promise.reject(new Error('down'));
    const broken: KeyValueStore = { get: down, getMany: down, set: down, delete: down, incr: down, setIfAbsent: down, close: async () => {} };
    const versions = new SharedVersions(broken, (error) => errors.push(error));
    expect(await versions.read(['t'])).toBeUndefined();
    await expect(versions.bump(['t', 'u'])).resolves.toBeUndefined();
    expect(errors.length).toBeGreaterThanOrEqual(3);
  });
});
