import { describe, expect, it } from 'vitest';
import { SharedBatch, SharedRead } from '../../src/db/shared-batch.js';

/** src/db/shared-batch.ts: lookups by key from concurrent callers, one fetch per event-loop turn. */
function recorded(rowsOf = (keys: readonly string[]) => keys.map((key) => ({ key }))) {
  const fetches: string[][] = [];
  const batch = new SharedBatch(async (keys) => {
    fetches.push([...keys]);
    return rowsOf(keys);
  }, 4);
  return { batch, fetches };
}

describe('SharedBatch', () => {
  it('merges the keys of callers in the same turn into one fetch, each key once', async () => {
    const { batch, fetches } = recorded();
    const [a, b] = await Promise.all([batch.rows(['1', '2']), batch.rows(['2', '3'])]);
    expect(fetches).toEqual([['1', '2', '3']]);
    expect(a.map((r) => r.key)).toEqual(['1', '2', '3']);
    expect(b).toBe(a);
  });

  it('a caller of a later turn gets a fetch of its own, made after it asked', async () => {
    const { batch, fetches } = recorded();
    await batch.rows(['1']);
    await batch.rows(['2']);
    expect(fetches).toEqual([['1'], ['2']]);
  });

  it('sends what it holds when the next caller would pass the key limit', async () => {
    const { batch, fetches } = recorded();
    await Promise.all([batch.rows(['1', '2', '3']), batch.rows(['4', '5']), batch.rows(['6'])]);
    expect(fetches).toEqual([['1', '2', '3'], ['4', '5', '6']]);
    // One caller with more keys than the limit still gets them in one fetch.
    await batch.rows(['a', 'b', 'c', 'd', 'e']);
    expect(fetches.at(-1)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('keeps groups apart: one fetch per group in a turn, each with its own keys and key limit', async () => {
    const fetches: [number, string[]][] = [];
    const batch = new SharedBatch(async (keys, size: number) => {
      fetches.push([size, [...keys]]);
      return keys.map((key) => ({ key, size }));
    }, 3);
    const [five, ten, fiveAgain, tenMore] = await Promise.all([
      batch.rows(['a', 'b'], 5),
      batch.rows(['a'], 10),
      batch.rows(['c'], 5),
      batch.rows(['b', 'c', 'd'], 10),
    ]);
    // 'b', 'c', 'd' would take group 10 past three keys: its pending fetch goes first.
    expect(fetches).toEqual([
      [10, ['a']],
      [5, ['a', 'b', 'c']],
      [10, ['b', 'c', 'd']],
    ]);
    expect(five).toBe(fiveAgain);
    expect(five.every((row) => row.size === 5)).toBe(true);
    expect(ten.map((row) => row.key)).toEqual(['a']);
    expect(tenMore.map((row) => row.key)).toEqual(['b', 'c', 'd']);
  });

  it('a failed fetch fails every caller that shared it, and the next turn fetches again', async () => {
    let fail = true;
    const { batch, fetches } = recorded((keys) => {
      if (fail) throw new Error('database down');
      return keys.map((key) => ({ key }));
    });
    const results = await Promise.allSettled([batch.rows(['1']), batch.rows(['2'])]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect((await batch.rows(['1'])).map((r) => r.key)).toEqual(['1']);
    expect(fetches).toHaveLength(2);
  });
});

describe('a fetch that throws at once', () => {
  it('fails its callers, not the process', async () => {
    const throwing = (..._args: unknown[]): Promise<never> => {
      throw new Error('bad statement');
    };
    await expect(new SharedBatch(throwing).rows(['1'])).rejects.toThrow('bad statement');
    await expect(new SharedRead(throwing).read(1)).rejects.toThrow('bad statement');
  });
});

describe('SharedRead', () => {
  it('one fetch per distinct arguments in a turn; a later turn fetches again', async () => {
    const fetches: string[] = [];
    const read = new SharedRead(async (limit: number, offset: number) => {
      fetches.push(`${limit}/${offset}`);
      return { limit, offset };
    });
    const [a, b, c] = await Promise.all([read.read(20, 0), read.read(20, 0), read.read(20, 20)]);
    expect(fetches).toEqual(['20/0', '20/20']);
    expect(b).toBe(a);
    expect(c).toEqual({ limit: 20, offset: 20 });
    await read.read(20, 0);
    expect(fetches).toEqual(['20/0', '20/20', '20/0']);
  });

  it('a failed fetch fails the callers that shared it only', async () => {
    const read = new SharedRead(async (page: number) => {
      if (page === 2) throw new Error('no');
      return page;
    });
    const results = await Promise.allSettled([read.read(1), read.read(2), read.read(2)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
  });
});
