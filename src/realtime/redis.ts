import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { MemoryPubSub, type MemoryPubSubOptions } from './memory.js';
import type { PubSub } from './pubsub.js';

export interface RedisPubSubOptions extends MemoryPubSubOptions {
  /** Prepended to every channel name in Redis (deployments sharing one Redis stay apart). */
  channelPrefix?: string;
  /** Hears Redis failures; publishing never throws because of them. */
  onError?: (error: unknown) => void;
}

/** Channels per SUBSCRIBE command when re-subscribing after a reconnect. */
const SUBSCRIBE_BATCH = 1000;
const RETRY_MS = 1_000;
const ORIGIN_LENGTH = 11; // 8 random bytes in base64url

/**
 * Pub/sub across instances on Redis, over two connections: one publishes, one is in
 * subscriber mode (Redis allows nothing else on it).
 *
 * Local listeners live in a MemoryPubSub, which gives the bounded per-iterator queues
 * and iterator semantics of the PubSub contract. This instance subscribes in Redis to
 * a channel when its first local listener arrives and unsubscribes when the last one
 * leaves, so Redis routes each event only to the instances that have subscribers.
 *
 * An event is delivered to local listeners at once, and sent through Redis tagged with
 * this instance's id, so that its echo is skipped here: local subscribers therefore
 * get events even before Redis confirms a SUBSCRIBE ("subscribe registers its listener
 * before it returns" holds), and without a Redis round trip.
 *
 * Redis down: publishing logs and drops the remote copy (never throws into the write
 * path; docs/operations.md: subscribers on other instances may miss events during the outage). On
 * every (re)connect the subscriber connection subscribes again to every channel that
 * has local listeners, so delivery resumes without a restart.
 */
export class RedisPubSub implements PubSub {
  private readonly local: MemoryPubSub;
  /** Local listeners per channel. */
  private readonly counts = new Map<string, number>();
  private readonly origin = randomBytes(8).toString('base64url');
  private readonly prefix: string;
  private readonly onError: (error: unknown) => void;
  private closed = false;
  /** Events from other instances delivered here (tests and diagnostics). */
  received = 0;

  constructor(
    private readonly publisher: Redis,
    private readonly subscriber: Redis,
    options: RedisPubSubOptions = {},
  ) {
    this.local = new MemoryPubSub(options);
    this.prefix = options.channelPrefix ?? '';
    this.onError = options.onError ?? (() => {});
    subscriber.on('message', (channel: string, message: string) => this.deliver(channel, message));
    subscriber.on('ready', () => this.resubscribe());
  }

  async publish(channel: string, payload: unknown): Promise<void> {
    if (this.closed) return;
    await this.local.publish(channel, payload);
    if (this.publisher.status !== 'ready') return; // dropped: Redis is down
    let message: string;
    try {
      message = `${this.origin}:${JSON.stringify(payload)}`;
    } catch (error) {
      this.onError(error);
      return;
    }
    // Not awaited: the write path does not wait for Redis. Order is kept anyway, as
    // one connection sends its commands in call order.
    this.publisher.publish(this.prefix + channel, message).catch(this.onError);
  }

  subscribe<T = unknown>(channel: string): AsyncIterableIterator<T> {
    const inner = this.local.subscribe<T>(channel);
    if (this.closed) return inner;
    this.retain(channel);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.release(channel);
    };
    return {
      next: async () => {
        const result = await inner.next();
        if (result.done) release();
        return result;
      },
      return: (value?: unknown) => {
        release();
        return inner.return ? inner.return(value) : Promise.resolve({ value: undefined, done: true });
      },
      throw: (error?: unknown) => {
        release();
        return inner.throw ? inner.throw(error) : Promise.reject(error);
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  listenerCount(): number {
    return this.local.listenerCount();
  }

  /** Channels this instance is subscribed to in Redis (tests check they are released). */
  channelCount(): number {
    return this.counts.size;
  }

  /** Ends every open iterator. The connections belong to the backends, which close them. */
  async close(): Promise<void> {
    this.closed = true;
    await this.local.close();
    const channels = [...this.counts.keys()];
    this.counts.clear();
    if (channels.length > 0 && this.subscriber.status === 'ready') {
      await this.subscriber.unsubscribe(...channels.map((c) => this.prefix + c)).catch(() => {});
    }
  }

  private deliver(prefixed: string, message: string): void {
    if (!prefixed.startsWith(this.prefix)) return;
    if (message.startsWith(this.origin) && message.charCodeAt(ORIGIN_LENGTH) === 58 /* : */) return; // our own echo
    const channel = prefixed.slice(this.prefix.length);
    if (!this.counts.has(channel)) return;
    let payload: unknown;
    try {
      payload = JSON.parse(message.slice(ORIGIN_LENGTH + 1));
    } catch (error) {
      this.onError(error);
      return;
    }
    this.received++;
    void this.local.publish(channel, payload);
  }

  private retain(channel: string): void {
    const count = this.counts.get(channel) ?? 0;
    this.counts.set(channel, count + 1);
    // While not ready, the 'ready' handler subscribes to every wanted channel.
    if (count === 0 && this.subscriber.status === 'ready') this.subscribeInRedis([channel]);
  }

  private release(channel: string): void {
    const count = this.counts.get(channel) ?? 0;
    if (count > 1) {
      this.counts.set(channel, count - 1);
      return;
    }
    this.counts.delete(channel);
    if (!this.closed && this.subscriber.status === 'ready') {
      this.subscriber.unsubscribe(this.prefix + channel).catch(this.onError);
    }
  }

  /** After a (re)connect the new connection has no subscriptions: take every wanted channel again. */
  private resubscribe(): void {
    const channels = [...this.counts.keys()];
    for (let i = 0; i < channels.length; i += SUBSCRIBE_BATCH) this.subscribeInRedis(channels.slice(i, i + SUBSCRIBE_BATCH));
  }

  /**
   * A SUBSCRIBE that fails on a live connection (a timeout) is retried shortly; one that
   * fails because the connection dropped is redone by `resubscribe` on 'ready'.
   */
  private subscribeInRedis(channels: string[]): void {
    this.subscriber.subscribe(...channels.map((c) => this.prefix + c)).catch((error: unknown) => {
      this.onError(error);
      const retry = setTimeout(() => {
        const wanted = channels.filter((c) => this.counts.has(c));
        if (!this.closed && wanted.length > 0 && this.subscriber.status === 'ready') this.subscribeInRedis(wanted);
      }, RETRY_MS);
      retry.unref();
    });
  }
}
