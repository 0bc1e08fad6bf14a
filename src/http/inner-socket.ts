import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

/**
 * The side of a client connection that node:http sees once the front door has begun
 * reading it (src/http/front-door.ts). The door keeps reading the real socket; each
 * request it passes on is pushed here, and everything node:http writes goes straight
 * out on the real socket. Node documents injecting any Duplex into an HTTP server
 * through its 'connection' event; this one also answers what Fastify, the rate
 * limiter and the logger ask of a socket (addresses, timeouts, Nagle), from the real one.
 *
 * Backpressure both ways: node:http pausing this stream pauses the real socket, and a
 * full real socket holds node:http's writes (their callbacks wait for it).
 */
export class InnerSocket extends Duplex {
  /** While set, node:http owns the connection's timeouts (it reads everything from here on). */
  private timeoutsDelegated = false;

  constructor(private readonly outer: Socket) {
    super({ allowHalfOpen: true, decodeStrings: true });
    outer.on('drain', () => this.emit('drain'));
  }

  /** From here on node:http reads the rest of the connection: its timeouts apply to the real socket. */
  delegateTimeouts(): void {
    this.timeoutsDelegated = true;
    this.outer.on('timeout', () => this.emit('timeout'));
  }

  get remoteAddress(): string | undefined {
    return this.outer.remoteAddress;
  }
  get remotePort(): number | undefined {
    return this.outer.remotePort;
  }
  get remoteFamily(): string | undefined {
    return this.outer.remoteFamily;
  }
  get localAddress(): string | undefined {
    return this.outer.localAddress;
  }
  get localPort(): number | undefined {
    return this.outer.localPort;
  }
  address() {
    return this.outer.address();
  }

  /** Node's keep-alive timer: the front door keeps its own until node:http reads the whole connection. */
  setTimeout(ms: number, callback?: () => void): this {
    if (this.timeoutsDelegated) this.outer.setTimeout(ms);
    if (callback) this.once('timeout', callback);
    return this;
  }
  setNoDelay(noDelay?: boolean): this {
    this.outer.setNoDelay(noDelay);
    return this;
  }
  setKeepAlive(enable?: boolean, delay?: number): this {
    this.outer.setKeepAlive(enable, delay);
    return this;
  }

  override _read(): void {
    if (this.outer.isPaused()) this.outer.resume();
  }

  /** Request bytes for node:http; false asks the caller to stop reading the real socket. */
  feed(chunk: Buffer): boolean {
    return this.push(chunk);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.outer.destroyed) return callback();
    this.outer.write(chunk, callback);
  }

  override _writev(chunks: { chunk: Buffer }[], callback: (error?: Error | null) => void): void {
    if (this.outer.destroyed) return callback();
    // One system call for a head and its body, as node:http does on a real socket.
    this.outer.cork();
    for (let i = 0; i < chunks.length - 1; i++) this.outer.write(chunks[i]!.chunk);
    this.outer.write(chunks[chunks.length - 1]!.chunk, callback);
    this.outer.uncork();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.outer.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.outer.destroy();
    callback(error);
  }

  /** node:http's `socket.destroySoon()`: end once the writes are out. */
  destroySoon(): void {
    this.end();
  }
}
