import { CloseCode } from 'graphql-ws';

/**
 * The WebSocket transport's constants in one place: the per-connection limits (docs/subscriptions.md),
 * our own back-pressure and liveness settings, and the close codes we send besides the
 * graphql-transport-ws ones (4400 bad message, 4401 subscribe before ack, 4406 wrong
 * subprotocol, 4408 no init in time, 4409 duplicate id, 4429 second init, 4500), which
 * graphql-ws's protocol core sends itself.
 */

export const WS_PATH = '/graphql';

export const WS_LIMITS = {
  /** `connection_init` within 3 s, else close 4408. */
  connectionInitWaitMs: 3_000,
  /** At most 64 KB per incoming message, else close 1009 (ws enforces it). */
  maxPayloadBytes: 64 * 1024,
  /** The 101st active subscription gets an `error` with TOO_MANY_SUBSCRIPTIONS. */
  maxSubscriptions: 100,
  /**
   * Back-pressure: a socket whose unsent bytes pass this is a subscriber that stopped
   * reading. It is closed (1013, the graphql-ws client retries it), never sent more,
   * and destroyed after `closeTimeoutMs` if it does not finish the close handshake.
   */
  maxBufferedBytes: 1024 * 1024,
  /** Close handshake deadline, after which ws destroys the socket. */
  closeTimeoutMs: 5_000,
  /** One sweep pings every socket; a socket that did not answer the previous ping is terminated. */
  keepAliveMs: 12_000,
  /** Shutdown: how long sockets get to answer the 1001 close before they are destroyed. */
  shutdownGraceMs: 3_000,
} as const;

export const WS_CLOSE = {
  /** An unexpected fault while handling a message. */
  InternalServerError: CloseCode.InternalServerError,
  /** Shutdown (docs/operations.md). */
  GoingAway: 1001,
  /** Sent by ws itself when a message exceeds `maxPayloadBytes`. */
  MessageTooBig: 1009,
  /** A slow consumer: its send buffer passed `maxBufferedBytes`. */
  TryAgainLater: 1013,
} as const;

/**
 * A graphql-transport-ws `next` message around a payload already serialised as JSON (a
 * response body, an event), so the payload is never parsed and serialised again.
 */
export function nextMessage(id: string, payloadJson: string): string {
  return `{"id":${JSON.stringify(id)},"type":"next","payload":${payloadJson}}`;
}
