import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Slow readers (docs/limits.md, "Slow readers"): a connection whose client accepts no
 * bytes of what the server is sending for HTTP_SEND_TIMEOUT_MS is destroyed, which frees
 * everything buffered for it. Without this, a client that asks for large responses and
 * never reads holds their bytes in the process for as long as it keeps the connection.
 *
 * One sweep for the whole server, not a timer per response: a connection with nothing
 * pending costs one length check per sweep (10,000 idle connections: about 0.15 ms a
 * second). Node's socket timeout does not fit: it sees no progress until a write
 * completes, and a response is one write, so a client reading a 20 MB response at
 * full speed on loopback was cut at a 1 s limit (test/http/slow-readers.test.ts).
 *
 * Progress is any decrease of what waits to be sent: the bytes queued in the stream
 * (`writableLength`, which drops when a write completes) or those of the write under
 * way (libuv's `writeQueueSize` on the socket's handle, which drops as the kernel
 * takes bytes; Node does not document it, so without it a write counts only when it
 * completes). More bytes queued behind a stalled client are not progress.
 */

interface Stall {
  queued: number;
  unsent: number;
  since: number;
}

export interface SendTimeout {
  /** Connections cut so far for accepting nothing. */
  cut(): number;
}

export function cutSlowReaders(app: FastifyInstance, timeoutMs: number): SendTimeout {
  const server = app.server;
  const open = new Set<Socket>();
  const stalls = new Map<Socket, Stall>();
  let cut = 0;

  // Only a connection that brought a request has a response to send (an upgraded one is
  // the WebSocket server's, which bounds its own sends): taken from node:http's request.
  server.on('request', (request: IncomingMessage) => {
    const socket = request.socket;
    if (open.has(socket)) return;
    open.add(socket);
    socket.once('close', () => {
      open.delete(socket);
      stalls.delete(socket);
    });
  });

  const sweep = (): void => {
    const now = Date.now();
    for (const socket of open) {
      const queued = socket.writableLength;
      // The common case, an idle or fully sent connection: one read (about 15 ns).
      if (queued === 0) {
        if (stalls.size !== 0) stalls.delete(socket);
        continue;
      }
      if (socket.destroyed) continue;
      const unsent = unsentOfCurrentWrite(socket);
      const stall = stalls.get(socket);
      if (!stall || queued < stall.queued || unsent < stall.unsent) {
        stalls.set(socket, { queued, unsent, since: now });
        continue;
      }
      // Bytes added behind the stall are not progress; remember them so a later drop is.
      stall.queued = queued;
      stall.unsent = unsent;
      if (now - stall.since < timeoutMs) continue;
      cut++;
      app.log.warn({ remoteAddress: socket.remoteAddress, queuedBytes: queued }, 'cut a connection whose client accepted no bytes (HTTP_SEND_TIMEOUT_MS)');
      stalls.delete(socket);
      socket.destroy();
    }
  };
  // A tenth of the limit (at most a second): a stall is cut within 10 % past it.
  const timer = setInterval(sweep, Math.min(1_000, Math.max(50, Math.floor(timeoutMs / 10))));
  timer.unref();
  server.once('close', () => clearInterval(timer));
  return { cut: () => cut };
}

function unsentOfCurrentWrite(socket: Socket): number {
  const size = (socket as unknown as { _handle?: { writeQueueSize?: unknown } | null })._handle?.writeQueueSize;
  return typeof size === 'number' ? size : 0;
}
