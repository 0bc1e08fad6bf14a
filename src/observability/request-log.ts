import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { scrubUrl } from '../auth/log.js';
import { infoEnabled } from './log-level.js';
import type { Metrics } from './metrics.js';

/**
 * Fastify's per-request logging replaced by one line per request, written when the
 * response has finished: method, URL, status, duration, and what the GraphQL route
 * learnt (operation, caller id, cache outcome; request.ts). No "incoming request" line,
 * no request or reply object through a serializer: a flat record on the request's own
 * child logger, whose `reqId` binding Fastify prepared once. The same moment feeds
 * the request-duration metrics, whether or not the line is logged.
 */

export interface RequestLine {
  /** `sse` for GraphQL over SSE (the line is written when the stream ends); absent for plain HTTP. */
  transport?: 'sse';
  method: string;
  url: string;
  status: number;
  durationMs: number;
  cache: string;
  caller?: string;
  operation?: string;
  operationType?: string;
}

export class RequestLog extends LogController {
  constructor(private readonly metrics: Metrics) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    const observation = request.observation;
    const status = reply.statusCode;
    const durationMs = reply.elapsedTime;
    if (!observation?.observed) {
      this.metrics.observeOperation({
        transport: observation?.transport ?? 'http',
        route: request.routeOptions.url ?? 'none',
        operationType: observation?.operationType ?? 'none',
        status,
        seconds: durationMs / 1000,
      });
    }
    if (observation) this.metrics.cacheOutcome(observation.cacheOutcome);

    const log = reply.log;
    if (error) return log.error({ ...requestLine(request, status, durationMs), err: error }, 'request errored');
    if (infoEnabled(log)) log.info(requestLine(request, status, durationMs), 'request completed');
  }
}

/** The GraphQL endpoint's query string is a document and its variables: its lines name the operation instead. */
const GRAPHQL_PATH = '/graphql';

function requestLine(request: FastifyRequest, status: number, durationMs: number): RequestLine {
  const graphql = request.routeOptions.url === GRAPHQL_PATH;
  const url = graphql ? GRAPHQL_PATH : scrubUrl(request.url);
  const observation = request.observation;
  if (observation === null) return { method: request.method, url, status, durationMs: round(durationMs), cache: 'none' };
  const line: RequestLine = {
    method: request.method,
    url,
    status,
    durationMs: round(durationMs),
    cache: observation.cacheOutcome,
    operationType: observation.operationType,
  };
  if (observation.transport === 'sse') line.transport = 'sse';
  if (observation.callerId !== undefined) line.caller = observation.callerId;
  if (observation.operationName !== undefined) line.operation = observation.operationName;
  return line;
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
