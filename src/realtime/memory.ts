import type { PubSub } from './pubsub.js';

/** Undelivered events one iterator keeps before it drops the oldest. */
export const DEFAULT_MAX_QUEUED = 1024;

interface Listener {
  push(payload: unknown): void;
  end(): void;
}

export interface MemoryPubSubOptions {
  /** Per iterator: undelivered events kept before the oldest is dropped. */
  maxQueued?: number;
}

/** In-process pub/sub: a set of listeners per channel. */
export class MemoryPubSub implements PubSub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly maxQueued: number;
  private count = 0;
  /** Events dropped because an iterator's queue was full (a consumer that stopped pulling). */
  dropped = 0;

  constructor(options: MemoryPubSubOptions = {}) {
    this.maxQueued = options.maxQueued ?? DEFAULT_MAX_QUEUED;
  }

  async publish(channel: string, payload: unknown): Promise<void> {
    const set = this.listeners.get(channel);
    if (!set) return;
    for (const listener of set) listener.push(payload);
  }

  subscribe<T = unknown>(channel: string): AsyncIterableIterator<T> {
    const queue: T[] = [];
    let waiting: ((result: IteratorResult<T>) => void) | undefined;
    let done = false;
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
    const listener: Listener = {
      push: (payload) => {
        if (waiting) {
          const resolve = waiting;
          waiting = undefined;
          resolve({ value: payload as T, done: false });
          return;
        }
        if (queue.length >= this.maxQueued) {
          queue.shift();
          this.dropped++;
        }
        queue.push(payload as T);
      },
      end: () => void finish(),
    };
    this.add(channel, listener);
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

  /** Ends every open iterator, which removes its listener. */
  async close(): Promise<void> {
    for (const set of [...this.listeners.values()]) for (const listener of [...set]) listener.end();
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
