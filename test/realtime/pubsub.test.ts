import { describe, expect, it } from 'vitest';
import { filterAsync } from '../../src/realtime/iterators.js';
import { MemoryPubSub } from '../../src/realtime/memory.js';

describe('MemoryPubSub', () => {
  it('delivers per channel, in order, and only to that channel', async () => {
    const pubsub = new MemoryPubSub();
    const a = pubsub.subscribe<number>('a');
    const b = pubsub.subscribe<number>('b');
    await pubsub.publish('a', 1);
    await pubsub.publish('a', 2);
    await pubsub.publish('b', 3);
    expect(await a.next()).toEqual({ value: 1, done: false });
    expect(await a.next()).toEqual({ value: 2, done: false });
    expect(await b.next()).toEqual({ value: 3, done: false });
    expect(pubsub.listenerCount()).toBe(2);
    await a.return!();
    await b.return!();
    expect(pubsub.listenerCount()).toBe(0);
  });

  it('return() ends a pending next() and removes the listener', async () => {
    const pubsub = new MemoryPubSub();
    const it = pubsub.subscribe('c');
    const pending = it.next();
    await it.return!();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(pubsub.listenerCount()).toBe(0);
  });

  it('keeps at most maxQueued undelivered events per iterator, dropping the oldest', async () => {
    const pubsub = new MemoryPubSub({ maxQueued: 3 });
    const it = pubsub.subscribe<number>('c');
    for (let i = 1; i <= 5; i++) await pubsub.publish('c', i);
    expect(pubsub.dropped).toBe(2);
    expect([(await it.next()).value, (await it.next()).value, (await it.next()).value]).toEqual([3, 4, 5]);
  });

  it('close() ends every iterator', async () => {
    const pubsub = new MemoryPubSub();
    const it = pubsub.subscribe('c');
    const pending = it.next();
    await pubsub.close();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(await it.next()).toEqual({ value: undefined, done: true });
    expect(pubsub.listenerCount()).toBe(0);
  });
});

describe('filterAsync', () => {
  it('skips what the predicate refuses and releases the source on return', async () => {
    const pubsub = new MemoryPubSub();
    const evens = filterAsync(pubsub.subscribe<number>('n'), async (n) => n % 2 === 0);
    for (const n of [1, 2, 3, 4]) await pubsub.publish('n', n);
    expect(await evens.next()).toEqual({ value: 2, done: false });
    expect(await evens.next()).toEqual({ value: 4, done: false });
    await evens.return!();
    expect(pubsub.listenerCount()).toBe(0);
  });

  it('releases the source when the predicate throws', async () => {
    const pubsub = new MemoryPubSub();
    const failing = filterAsync(pubsub.subscribe<number>('n'), () => {
      throw new Error('boom');
    });
    await pubsub.publish('n', 1);
    await expect(failing.next()).rejects.toThrow('boom');
    expect(pubsub.listenerCount()).toBe(0);
  });
});
