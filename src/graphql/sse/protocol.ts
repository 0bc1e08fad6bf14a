import { print } from 'graphql-sse';

/**
 * GraphQL over Server-Sent Events, the graphql-sse protocol in its distinct connections
 * mode (docs/subscriptions.md, "Server-Sent Events"): the wire format in one place, with
 * the transport's bounds. A frame is `event: next` or `event: complete` and a `data:` line,
 * exactly as graphql-sse's `print` writes them (graphql-sse's `createHandler` is not used:
 * docs/design-notes.md#server-sent-events-transport).
 */

export const SSE_LIMITS = {
  /**
   * Back-pressure: a stream whose unsent bytes pass this is a client that stopped reading.
   * It is cut, never buffered for (as a WebSocket's `maxBufferedBytes`).
   */
  maxBufferedBytes: 1024 * 1024,
  /** A comment line to every open stream this often, as graphql-sse does: proxies keep idle streams open, dead clients show. */
  keepAliveMs: 12_000,
  /** Shutdown: how long streams get to take their `complete` before they are cut. */
  shutdownGraceMs: 3_000,
} as const;

/** A `next` event around a result already serialised as JSON (a response body, an event), never parsed again. */
export function nextEvent(resultJson: string): string {
  return `event: next\ndata: ${resultJson}\n\n`;
}

/** The `complete` event, with the empty `data:` EventSource needs to fire its listener. */
export const COMPLETE_EVENT = print({ event: 'complete', data: null });

/** A comment: opens the stream at once (some browsers wait for a first byte) and keeps it alive. */
export const KEEP_ALIVE = ':\n\n';

export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/**
 * A refusal of the operation itself (status 400: parse, validation, depth, complexity,
 * variables, a malformed body; and a persisted-query miss, 200) is answered inside an
 * accepted stream, as the protocol requires, so the client's `next` sees the errors. A
 * refusal of the request (401, 405, 413, 415, 429, 503) is answered before the stream
 * opens, with the status HTTP gives it.
 */
export function refusedInStream(status: number): boolean {
  return status === 400 || status === 200;
}
