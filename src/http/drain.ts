import { Server as NetServer, type Socket } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * Draining the HTTP server at shutdown without cutting anyone off (docs/operations.md,
 * "Graceful shutdown"). node:http's own close() stops accepting and destroys the
 * connections that are idle at that instant, which resets a request already on its way
 * on a keep-alive connection; and a response in flight keeps saying
 * `Connection: keep-alive`, so its connection then stays open for the whole keep-alive
 * timeout (72 s) and the process cannot exit. Here instead:
 *
 * 1. the listening socket closes: no new connections;
 * 2. every response from now on, including those in flight, says `Connection: close`,
 *    so node ends each connection right after its response;
 * 3. idle keep-alive connections stay open for `lingerMs`: a request that was already
 *    sent on one (or arrives during the linger) is answered, then the connection closes;
 * 4. after the linger, connections still idle are closed (node's closeIdleConnections),
 *    and again every 250 ms, for a response that had begun before the drain.
 *
 * What is left then are connections with a request in flight; Fastify's close waits
 * for them.
 */
export interface HttpDrain {
  /** Runs steps 1–4; resolves after the linger, or sooner once no connection is left. */
  drain(lingerMs: number): Promise<void>;
}

/** node:http's own pointer from a socket to the response being written on it (undocumented, long-standing). */
type HttpSocket = Socket & { _httpMessage?: ServerResponse | null };

export function trackConnections(server: Server): HttpDrain {
  const sockets = new Set<HttpSocket>();
  server.on('connection', (socket: HttpSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  // No 'upgrade' listener here: one would make node hand every upgrade to it, even once
  // the WebSocket server has stopped listening. Upgraded sockets stay in the set (with no
  // response) until the WebSocket server has closed them, which it does meanwhile.

  let draining: Promise<void> | undefined;
  const drain = async (lingerMs: number) => {
    // The listener alone: http.Server#close would also destroy idle connections now.
    if (server.listening) NetServer.prototype.close.call(server);
    server.prependListener('request', (_request: IncomingMessage, response: ServerResponse) => closeAfter(response));
    for (const socket of sockets) {
      const response = socket._httpMessage;
      if (response) closeAfter(response);
    }
    const deadline = Date.now() + lingerMs;
    while (sockets.size > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, deadline - Date.now())));
    }
    server.closeIdleConnections();
    const sweep = setInterval(() => server.closeIdleConnections(), 250);
    sweep.unref();
    server.once('close', () => clearInterval(sweep));
  };
  return { drain: (lingerMs) => (draining ??= drain(lingerMs)) };
}

function closeAfter(response: ServerResponse): void {
  if (!response.headersSent) response.setHeader('connection', 'close');
}
