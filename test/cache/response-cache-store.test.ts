import { describe, expect, it } from 'vitest';
import { ANONYMOUS, can, isSelf, type Caller } from '../../src/domain/caller.js';
import { ResponseCache, type CacheSlot, type Lookup } from '../../src/cache/response-cache.js';
import { MemoryStore } from '../../src/store/memory.js';
import { LocalVersions, SharedVersions, type VersionStore } from '../../src/cache/versions.js';

/**
 * The response cache's rules (src/cache/), with the version stores but no
 * server: an entry is valid while all the tags it read keep the versions taken before
 * reading; a write that lands while a miss executes leaves nothing stale behind; an
 * entry is keyed by what the execution's rules depended on of the caller, and lookups try the broadest
 * key first. Over the shared store (Redis's code path) a miss fetches the versions of
 * what it reads before reading, so its first result is stored too.
 */
const operation = { operationType: 'query' };
const alice: Caller = { kind: 'user', id: 'alice', role: 'user', sessionId: null };
const bob: Caller = { kind: 'user', id: 'bob', role: 'user', sessionId: null };
const eddie: Caller = { kind: 'user', id: 'eddie', role: 'editor', sessionId: null };
const edna: Caller = { kind: 'user', id: 'edna', role: 'editor', sessionId: null };

/** Looks up; on a miss runs `execute` with the slot's recorder and the caller heard by the slot's scope, stores its answer; returns what was served. */
async function serve(cache: ResponseCache, caller: Caller, execute: (slot: CacheSlot, caller: Caller) => Promise<string>, variables = {}) {
  const found: Lookup = await cache.lookup(operation, variables, caller);
  if (found && 'body' in found) return { body: found.body.toString(), hit: true };
  if (!found) throw new Error('nothing may be cached now');
  const body = await execute(found, { ...caller, audience: found.scope });
  cache.store(found, body);
  return { body, hit: false };
}

/** An execution that reads `tags` and answers with their current "data". */
const reading = (data: Map<string, string>, tags: string[]) => async (slot: CacheSlot) =>
  slot.recorder.read(tags, async () => tags.map((t) => data.get(t) ?? '-').join(','));

for (const [name, make] of [
  ['in memory', () => new LocalVersions()],
  ['shared (Redis code path)', () => new SharedVersions(new MemoryStore(), () => {})],
] as [string, () => VersionStore][]) {
  describe(`response cache, versions ${name}`, () => {
    it('serves an entry until a tag it read is bumped; other bumps leave it warm', async () => {
      const versions = make();
      const cache = new ResponseCache(versions, 1 << 20);
      const data = new Map([['p:1', 'one']]);
      const first = await serve(cache, ANONYMOUS, reading(data, ['p:1']));
      expect(first).toEqual({ body: 'one', hit: false });
      expect(await serve(cache, ANONYMOUS, reading(data, ['p:1']))).toEqual({ body: 'one', hit: true });
      await versions.bump(['p:2', 'U']);
      expect(await serve(cache, ANONYMOUS, reading(data, ['p:1']))).toEqual({ body: 'one', hit: true });
      data.set('p:1', 'uno');
      await versions.bump(['p:1']);
      expect(await serve(cache, ANONYMOUS, reading(data, ['p:1']))).toEqual({ body: 'uno', hit: false });
      expect(await serve(cache, ANONYMOUS, reading(data, ['p:1']))).toEqual({ body: 'uno', hit: true });
    });

    it('keeps an answer at most 150 s, read or not; answers stored together expire over its last 30 s', async () => {
      // lru-cache takes a start time of 0 for "no expiry": the clock starts later.
      let now = 1_000_000;
      const cache = new ResponseCache(make(), 1 << 20, { now: () => now });
      const data = new Map([['p:1', 'one']]);
      // The cache reads its clock at most once a millisecond of real time: let that pass after each step.
      const after = async (ms: number) => {
        now = 1_000_000 + ms;
        await new Promise((resolve) => setTimeout(resolve, 5));
      };
      const hits = async () => {
        let n = 0;
        for (let v = 0; v < 50; v++) if ((await serve(cache, ANONYMOUS, reading(data, ['p:1']), { v })).hit) n++;
        return n;
      };
      expect(await hits()).toBe(0);
      await after(119_000);
      expect(await hits()).toBe(50);
      // Some have expired and run again (stored anew); the others are still served.
      await after(135_000);
      const kept = await hits();
      expect(kept).toBeGreaterThan(0);
      expect(kept).toBeLessThan(50);
      // The first ones are gone by 150 s, however often they were read; those stored at 135 s are not.
      await after(150_001);
      expect(await hits()).toBe(50 - kept);
    });

    it('a write that commits while a miss executes leaves no stale entry', async () => {
      const versions = make();
      const cache = new ResponseCache(versions, 1 << 20);
      const data = new Map([['p:1', 'old']]);
      // The reader records the tag, reads the old data; then the write commits and bumps.
      const stale = await serve(cache, ANONYMOUS, async (slot) => {
        const body = await reading(data, ['p:1'])(slot);
        data.set('p:1', 'new');
        await versions.bump(['p:1']);
        return body;
      });
      expect(stale).toEqual({ body: 'old', hit: false });
      expect(await serve(cache, ANONYMOUS, reading(data, ['p:1']))).toEqual({ body: 'new', hit: false });
    });

    it('an execution that read nothing of the caller is shared by everyone', async () => {
      const cache = new ResponseCache(make(), 1 << 20);
      const data = new Map([['B', 'books']]);
      await serve(cache, ANONYMOUS, reading(data, ['B']));
      for (const caller of [alice, eddie]) expect((await serve(cache, caller, reading(data, ['B']))).hit).toBe(true);
    });

    it('one that read the role is shared by that role; one that read the identity by nobody else', async () => {
      const cache = new ResponseCache(make(), 1 << 20);
      const byRole = async (_slot: CacheSlot, caller: Caller) => (can(caller, 'write:posts') ? 'drafts' : 'published');
      expect(await serve(cache, eddie, byRole)).toEqual({ body: 'drafts', hit: false });
      expect(await serve(cache, edna, byRole)).toEqual({ body: 'drafts', hit: true });
      expect(await serve(cache, alice, byRole)).toEqual({ body: 'published', hit: false });
      expect(await serve(cache, bob, byRole)).toEqual({ body: 'published', hit: true });
      expect(await serve(cache, ANONYMOUS, byRole)).toEqual({ body: 'published', hit: false });

      const byIdentity = async (_slot: CacheSlot, caller: Caller) => (isSelf(caller, 'alice') ? 'mine' : 'theirs');
      const vars = { v: 2 };
      expect(await serve(cache, alice, byIdentity, vars)).toEqual({ body: 'mine', hit: false });
      expect(await serve(cache, bob, byIdentity, vars)).toEqual({ body: 'theirs', hit: false });
      expect(await serve(cache, alice, byIdentity, vars)).toEqual({ body: 'mine', hit: true });
      expect(await serve(cache, bob, byIdentity, vars)).toEqual({ body: 'theirs', hit: true });
    });

    describe('a miss joins the same request while it executes, of the same caller or one whose answer it shares', () => {
      /** A cache whose request for p:1 ran once and went old (so, with Redis, the lookup fetches p:1 with its versions). */
      async function warmed() {
        const versions = make();
        const cache = new ResponseCache(versions, 1 << 20);
        const data = new Map([['p:1', 'zero']]);
        await serve(cache, ANONYMOUS, reading(data, ['p:1']));
        data.set('p:1', 'one');
        await versions.bump(['p:1']);
        let open!: () => void;
        const gate = new Promise<void>((resolve) => (open = resolve));
        const executed: string[] = [];
        /** Reads p:1, then waits for the gate before answering. */
        const slow = async (slot: CacheSlot) => {
          const body = await reading(data, ['p:1'])(slot);
          executed.push(body);
          await gate;
          return body;
        };
        return { versions, cache, data, open, executed, slow };
      }
      const turn = () => new Promise((resolve) => setImmediate(resolve));

      it('is answered by that execution', async () => {
        const { cache, open, executed, slow } = await warmed();
        const first = serve(cache, ANONYMOUS, slow);
        await turn();
        const second = serve(cache, ANONYMOUS, slow);
        open();
        expect(await first).toEqual({ body: 'one', hit: false });
        expect(await second).toEqual({ body: 'one', hit: true });
        expect(executed).toEqual(['one']);
      });

      it('not once a write bumped what that execution read: it executes itself', async () => {
        const { versions, cache, data, open, executed, slow } = await warmed();
        const first = serve(cache, ANONYMOUS, slow);
        await turn();
        data.set('p:1', 'two');
        await versions.bump(['p:1']);
        const second = serve(cache, ANONYMOUS, reading(data, ['p:1']));
        expect(await second).toEqual({ body: 'two', hit: false });
        open();
        expect(await first).toEqual({ body: 'one', hit: false });
        expect(executed).toEqual(['one']);
        // Never the old answer (with Redis the late store may have replaced the entry: a miss).
        expect((await serve(cache, ANONYMOUS, reading(data, ['p:1']))).body).toBe('two');
      });

      it('a write after it joined: the answer was current while it was under way, and is not kept', async () => {
        const { versions, cache, data, open, slow } = await warmed();
        const first = serve(cache, ANONYMOUS, slow);
        await turn();
        const second = serve(cache, ANONYMOUS, slow);
        await turn();
        data.set('p:1', 'two');
        await versions.bump(['p:1']);
        open();
        expect(await first).toEqual({ body: 'one', hit: false });
        expect(await second).toEqual({ body: 'one', hit: true });
        expect(await serve(cache, ANONYMOUS, reading(data, ['p:1']))).toEqual({ body: 'two', hit: false });
      });

      it("another caller's, when what it depended on of its caller is shared: answered by it", async () => {
        const { cache, open, executed, slow } = await warmed();
        const first = serve(cache, alice, slow);
        await turn();
        const second = serve(cache, bob, slow);
        const third = serve(cache, ANONYMOUS, slow);
        await turn();
        open();
        expect(await first).toEqual({ body: 'one', hit: false });
        expect(await second).toEqual({ body: 'one', hit: true });
        expect(await third).toEqual({ body: 'one', hit: true });
        expect(executed).toEqual(['one']);
      });

      it("not another caller's that already depended on its identity: it executes itself at once", async () => {
        const { cache, data, open, executed, slow } = await warmed();
        const mine = async (slot: CacheSlot, caller: Caller) => (isSelf(caller, 'alice') ? 'mine:' : 'theirs:') + (await slow(slot));
        const first = serve(cache, alice, mine);
        await turn();
        // Not waiting for alice's execution (still at its gate): bob's own answer comes first.
        expect(await serve(cache, bob, async (slot, caller) => (isSelf(caller, 'alice') ? 'mine:' : 'theirs:') + (await reading(data, ['p:1'])(slot)))).toEqual({
          body: 'theirs:one',
          hit: false,
        });
        open();
        expect(await first).toEqual({ body: 'mine:one', hit: false });
        expect(executed).toEqual(['one']);
      });

      it('one that came to depend on more of its caller than the joiner shares: the joiner executes itself after it', async () => {
        const { cache, open, executed, slow } = await warmed();
        // Asks the role only after its read: anonymous and signed-in callers joined by then.
        const late = async (slot: CacheSlot, caller: Caller) => {
          const body = await slow(slot);
          return `${can(caller, 'write:posts') ? 'drafts' : 'published'}:${body}`;
        };
        const first = serve(cache, eddie, late);
        await turn();
        const editor = serve(cache, edna, late);
        const reader = serve(cache, alice, late);
        await turn();
        open();
        expect(await first).toEqual({ body: 'drafts:one', hit: false });
        expect(await editor).toEqual({ body: 'drafts:one', hit: true });
        expect(await reader).toEqual({ body: 'published:one', hit: false });
        expect(executed).toEqual(['one', 'one']);
      });

      it('when that execution keeps nothing (errors, a refusal), whoever joined executes itself', async () => {
        const { cache, data } = await warmed();
        const leader = await cache.lookup(operation, {}, ANONYMOUS);
        if (!leader || 'body' in leader) throw new Error('expected a miss');
        const second = serve(cache, ANONYMOUS, reading(data, ['p:1']));
        await turn();
        cache.release(leader);
        expect(await second).toEqual({ body: 'one', hit: false });
      });
    });

    it('reads after awaits (the way loaders batch) are recorded too', async () => {
      const versions = make();
      const cache = new ResponseCache(versions, 1 << 20);
      const data = new Map([
        ['U', 'list'],
        ['a:1', 'posts'],
      ]);
      const nested = async (slot: CacheSlot) => {
        const list = await slot.recorder.read(['U'], async () => data.get('U')!);
        await new Promise((resolve) => setImmediate(resolve));
        const posts = await slot.recorder.read(['a:1'], async () => data.get('a:1')!);
        return `${list}/${posts}`;
      };
      await serve(cache, ANONYMOUS, nested);
      expect((await serve(cache, ANONYMOUS, nested)).hit).toBe(true);
      data.set('a:1', 'more posts');
      await versions.bump(['a:1']);
      expect(await serve(cache, ANONYMOUS, nested)).toEqual({ body: 'list/more posts', hit: false });
    });
  });
}

describe('response cache over the shared store', () => {
  it('a version that cannot be fetched before its read makes the result not stored', async () => {
    const kv = new MemoryStore();
    const versions = new SharedVersions(kv, () => {});
    const cache = new ResponseCache(versions, 1 << 20);
    const data = new Map([['p:1', 'one']]);
    const found = await cache.lookup(operation, {}, ANONYMOUS);
    if (!found || 'body' in found) throw new Error('expected a miss');
    // Redis goes away between the lookup and the read of a tag the lookup did not fetch.
    kv.getMany = () => Promise.reject(new Error('down'));
    const body = await reading(data, ['p:1'])(found);
    cache.store(found, body);
    expect(found.recorder.complete).toBe(false);
    kv.getMany = MemoryStore.prototype.getMany.bind(kv);
    expect((await serve(cache, ANONYMOUS, reading(data, ['p:1']))).hit).toBe(false);
  });
});
