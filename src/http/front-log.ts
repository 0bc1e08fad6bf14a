import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';

/** What the log line needs of a request the front door answered, from either of its readers. */
export interface AnsweredRequest {
  method: string;
  url: string;
  host: string | undefined;
  socket: Socket;
}

/** The line Fastify logs for each request it completes, so request logs stay whole. */
export function logAnswered(log: FastifyBaseLogger, request: AnsweredRequest, statusCode: number, responseTime: number): void {
  const { method, url, host, socket } = request;
  log.info(
    {
      // The shape the logger's `req` serializer reads (src/auth/log.ts), which scrubs the URL.
      req: { method, url, host, ip: socket.remoteAddress, socket },
      res: { statusCode },
      responseTime,
      front: true,
    },
    'request completed',
  );
}
