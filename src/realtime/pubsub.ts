/**
 * Publish/subscribe by channel: in-process for one instance, Redis across several.
 * Payloads are JSON-serialisable so both implementations carry the same values.
 *
 * What every implementation guarantees (the WebSocket fan-out relies on it):
 * - `subscribe` registers its listener before it returns, so an event published after
 *   the call reaches the iterator;
 * - events of one channel arrive in publish order;
 * - an iterator buffers a bounded number of undelivered events (a consumer that stops
 *   pulling loses the oldest ones instead of growing memory without bound);
 * - `return()` on the iterator removes its listener at once and ends a pending `next()`;
 * - `close()` ends every open iterator (`done: true`) and removes every listener.
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
