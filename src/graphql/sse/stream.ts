import { Readable } from 'node:stream';
import { COMPLETE_EVENT, KEEP_ALIVE, nextEvent } from './protocol.js';

/**
 * One event stream: the body of an SSE response, which Fastify pipes to the client (so
 * its hooks, headers and request log apply as to any response). Frames are pushed as
 * they happen; the pipe moves them on as fast as the client reads. What the client has
 * not taken waits here, bounded: past `maxBufferedBytes` the stream is cut (`onOverflow`)
 * rather than buffered for (docs/limits.md, "Slow readers").
 */
export class EventStream extends Readable {
  private completed = false;

  constructor(
    private readonly maxBufferedBytes: number,
    /** The client stopped reading: cut its connection (which frees what waits for it). */
    private readonly onOverflow: (stream: EventStream) => void,
  ) {
    super();
  }

  /** Pushed, never pulled: the pipe's demand only decides when buffered frames leave. */
  override _read(): void {}

  /** Writes one frame, unless the stream has ended or its client stopped reading. */
  send(frame: string): void {
    if (this.completed || this.destroyed) return;
    if (this.readableLength > this.maxBufferedBytes) {
      // Once: nothing more is pushed, and the client's connection goes.
      this.destroy();
      this.onOverflow(this);
      return;
    }
    this.push(frame);
  }

  /** A `next` event around a result serialised already. */
  next(resultJson: string): void {
    this.send(nextEvent(resultJson));
  }

  keepAlive(): void {
    this.send(KEEP_ALIVE);
  }

  /** The `complete` event, then the end of the response (idempotent). */
  complete(): void {
    if (this.completed || this.destroyed) return;
    this.send(COMPLETE_EVENT);
    this.completed = true;
    if (!this.destroyed) this.push(null);
  }
}
