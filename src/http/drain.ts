import type { IncomingMessage } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Draining the HTTP server at shutdown without cutting anyone off (docs/operations.md,
 * "Graceful shutdown"). node:http's own close() stops accepting and destroys the
 * connections that are idle at that instant, which resets a request already on its way
 * on a keep-alive connection; and a response in flight keeps saying
 * `Connection: keep-alive`, so its connection then stays open for the whole keep-alive
 * timeout (72 s) and the process cannot exit. Here instead:
 *
 * 1. the listening socket closes: no new connections;
 * 2. every response sent from now on, including those of requests in flight, says
 *    `Connection: close` (a root `onSend` hook), so node ends each connection right
 *    after its response;
 * 3. idle keep-alive connections stay open for `lingerMs`: a request that was already
 *    sent on one (or arrives during the linger) is answered, then the connection closes;
 * 4. after the linger, connections still idle are closed (node's closeIdleConnections),
 *    and again every 250 ms, for a response that had begun before the drain. So are
 *    connections that have not brought a request at all: node counts those as busy (its
 *    `headersTimeout` runs for them), yet clients open them ahead of need — browsers
 *    speculatively, undici again after a request it aborted (graphql-sse's client does,
 *    at every `complete`) — and one would hold the drain until that timeout.
 *
 * What is left then are connections with a request in flight; Fastify's close waits
 * for them. Register before the routes, so the hook covers every response.
 */
export interface HttpDrain {
  /** Runs steps 1–4; resolves after the linger, or sooner once no connection is left. */
  drain(lingerMs: number): Promise<void>;
}

export function drainOnClose(app: FastifyInstance): HttpDrain {
  let draining = false;
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (draining) reply.header('connection', 'close');
    done(null, payload);
  });
  const server = app.server;
  // Connections that have brought no request yet; most leave this set at their first.
  const silent = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    silent.add(socket);
    socket.once('close', () => silent.delete(socket));
  });
  // A request, or an upgrade: a WebSocket's own shutdown closes it.
  const brought = (request: IncomingMessage) => silent.delete(request.socket);
  server.on('request', brought);
  server.on('upgrade', brought);
  const closeIdle = () => {
    server.closeIdleConnections();
    for (const socket of silent) socket.destroy();
  };
  const openConnections = () => new Promise<number>((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count)));

  let drained: Promise<void> | undefined;
  const drain = async (lingerMs: number) => {
    draining = true;
    // The listener alone: http.Server#close would also destroy idle connections now.
    if (server.listening) NetServer.prototype.close.call(server);
    const deadline = Date.now() + lingerMs;
    while (Date.now() < deadline && (await openConnections()) > 0) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(50, deadline - Date.now())));
    }
    closeIdle();
    const sweep = setInterval(closeIdle, 250);
    sweep.unref();
    server.once('close', () => clearInterval(sweep));
  };
  return { drain: (lingerMs) => (drained ??= drain(lingerMs)) };
}
