/**
 * Publish/subscribe by channel: in-process for one instance, Redis across several.
 * Payloads are JSON-serialisable so both implementations carry the same values. Both
 * keep one contract the WebSocket fan-out relies on: listener registered before
 * `subscribe` returns, publish order per channel, bounded buffers, listeners removed at
 * once on `return()` and `close()` (docs/design-notes.md#pubsub-contract).
 */
export interface PubSub {
  publish(channel: string, payload: unknown): Promise<void>;
  /**
   * Listens on one channel until the iterator is returned (a `for await` loop that
   * ends, or `return()` from graphql-ws on complete/close), which removes the listener.
   */
  subscribe<T = unknown>(channel: string): AsyncIterableIterator<T>;
  /** Listeners currently registered, over all channels (tests check it returns to zero). */
  listenerCount(): number;
  close(): Promise<void>;
}

/** Channel names in one place: one channel per post id, so events are routed, not filtered. */
export const channels = {
  userCreated: () => 'userCreated',
  postPublished: (postId: string) => `postPublished:${postId}`,
  postReactionAdded: (postId: string) => `postReactionAdded:${postId}`,
} as const;
