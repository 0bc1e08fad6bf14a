import type { PubSub } from './pubsub.js';

type Listener = (payload: unknown) => void;

/** In-process pub/sub: a set of listeners per channel. */
export class MemoryPubSub implements PubSub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private count = 0;

  async publish(channel: string, payload: unknown): Promise<void> {
    const set = this.listeners.get(channel);
    if (!set) return;
    for (const listener of set) listener(payload);
  }

  subscribe<T = unknown>(channel: string): AsyncIterableIterator<T> {
    const queue: T[] = [];
    let waiting: ((result: IteratorResult<T>) => void) | undefined;
    let done = false;
    const listener: Listener = (payload) => {
      if (waiting) {
        const resolve = waiting;
        waiting = undefined;
        resolve({ value: payload as T, done: false });
      } else {
        queue.push(payload as T);
      }
    };
    this.add(channel, listener);
    const finish = (): IteratorResult<T> => {
      if (!done) {
        done = true;
        this.remove(channel, listener);
        queue.length = 0;
        waiting?.({ value: undefined, done: true });
        waiting = undefined;
      }
      return { value: undefined, done: true };
    };
    return {
      next: () => {
        if (queue.length > 0) return Promise.resolve({ value: queue.shift() as T, done: false });
        if (done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (waiting = resolve));
      },
      return: () => Promise.resolve(finish()),
      throw: (error) => {
        finish();
        return Promise.reject(error);
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  listenerCount(): number {
    return this.count;
  }

  async close(): Promise<void> {
    this.listeners.clear();
    this.count = 0;
  }

  private add(channel: string, listener: Listener): void {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(listener);
    this.count++;
  }

  private remove(channel: string, listener: Listener): void {
    const set = this.listeners.get(channel);
    if (set?.delete(listener)) {
      this.count--;
      if (set.size === 0) this.listeners.delete(channel);
    }
  }
}
