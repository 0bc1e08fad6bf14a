import { LRUCache } from 'lru-cache';
import { AUTH_COOKIE } from '../auth/cookies.js';
import { clientKey, limiterKey, rememberDecision, windowDecision, type Counters, type LimitDecision, type WindowCount } from '../auth/rate-limit.js';
import { ANONYMOUS } from '../domain/caller.js';
import type { CacheProbe } from './cache-probe.js';
import type { FrontAnswer, FrontRequest, FrontResponse } from '../http/front-door.js';
import { acceptedMediaType, contentTypeOf, isAcceptable } from './media.js';
import { wantsHtml } from './request-params.js';
import type { ResponseCache } from './response-cache.js';
import { clientIp } from './ws-auth.js';

/**
 * What the front door (src/http/front-door.ts) may answer itself: an anonymous query
 * whose response is cached, from a client under its rate limit — byte for byte what
 * the Fastify route would answer, headers included. It declines everything else:
 * a credential of any kind (its caller is looked up by the route), the GraphiQL page,
 * an Accept header the route answers with 406, a miss, a client over its limit.
 *
 * A request text seen before is not even parsed: the exact request (method, Accept,
 * Content-Type, URL or body) maps to the cache key its first probe found. That holds
 * because reading, resolving and preparing a text is a pure function of it, except
 * where persisted queries consult their store: those are probed every time.
 *
 * Every anonymous request read here counts here, once, on the same `/graphql` counter
 * as the route's (key `graphql:ip:<address>`); when it declines, the decision goes
 * with the request to the route (`declined` → `rememberDecision`), which answers
 * on it — the response of a miss, or the 429 — without counting again.
 */
export interface FrontAnswerOptions {
  probe: CacheProbe;
  cache: ResponseCache;
  counters: Counters;
  rateLimit: { max: number; windowMs: number };
  trustProxy: boolean;
  isProduction: boolean;
}

/** Memory for request texts already mapped to cache keys. */
const SEEN_BYTES = 4 * 1024 * 1024;

/** A request text seen before: the headers that shaped its answer, and its cache key. */
interface Seen {
  method: string;
  accept: string | undefined;
  contentType: string | undefined;
  cacheKey: string;
}

export function cachedQueryAnswer(options: FrontAnswerOptions): FrontAnswer {
  const { probe, cache, counters, rateLimit, trustProxy, isProduction } = options;
  // By body (POST) or URL (GET); a text asked for with other headers is probed again.
  const seen = new LRUCache<string, Seen>({ maxSize: SEEN_BYTES, sizeCalculation: (entry, text) => (text.length + entry.cacheKey.length) * 2 + 128 });

  /** The probe of a text not seen before: a hit's body, or undefined. */
  const probeFirst = async (request: FrontRequest, text: string): Promise<Buffer | undefined> => {
    const { method, headers } = request;
    if (!isAcceptable(headers.accept)) return undefined;
    const found = await probe.probe(request, ANONYMOUS);
    if (found === undefined || !('hit' in found)) return undefined;
    if (found.repeatable) seen.set(text, { method, accept: headers.accept, contentType: headers['content-type'], cacheKey: found.key });
    return found.hit;
  };

  /** Decisions of declined requests, until node:http has made their IncomingMessage. */
  const decisions = new WeakMap<FrontRequest, LimitDecision>();

  const settle = (request: FrontRequest, count: WindowCount, body: Buffer | undefined): FrontResponse | undefined => {
    const decision = windowDecision(rateLimit.max, count);
    if (body === undefined || !decision.allowed) {
      // The route answers (a miss, or the 429) on this same count.
      decisions.set(request, decision);
      return undefined;
    }
    // `limitHeaders` (rate-limit.ts) spelled out as one literal: a fixed object shape on the hot path.
    const headers = {
      // As the route's: its answer differs by Origin (src/http/cors.ts), and requests with one go there.
      vary: 'Origin',
      'x-ratelimit-limit': decision.limit,
      'x-ratelimit-remaining': decision.remaining,
      'x-ratelimit-reset': decision.retryAfterSeconds,
      'content-type': contentTypeOf(acceptedMediaType(request.headers.accept)),
      'content-length': body.length,
    };
    return { status: 200, headers, body };
  };

  const answer = (request: FrontRequest): ReturnType<FrontAnswer['answer']> => {
    const { method, headers } = request;
    if (headers.authorization !== undefined || headers.cookie?.includes(AUTH_COOKIE)) return undefined;
    // A browser page's request: CORS headers are the route's (src/http/cors.ts).
    if (headers.origin !== undefined) return undefined;
    // The GraphiQL page is not rate limited on the route either.
    if (!isProduction && method === 'GET' && wantsHtml(request)) return undefined;

    // Counting and looking up go together: with Redis both commands share one round trip.
    const limitKey = limiterKey('graphql', clientKey(ANONYMOUS, clientIp(request, trustProxy)));
    const count = counters.hitNow?.(limitKey, rateLimit.windowMs) ?? counters.hit(limitKey, rateLimit.windowMs);
    const text = request.body ?? request.url;
    const known = seen.get(text);
    const matches = known?.method === method && known.accept === headers.accept && known.contentType === headers['content-type'];
    // Seen and mapped: a current entry is the answer; otherwise the route executes it.
    const body = matches ? cache.hit(known.cacheKey) : probeFirst(request, text);
    if (count instanceof Promise || body instanceof Promise) {
      return Promise.all([count, body]).then(([c, b]) => settle(request, c, b));
    }
    return settle(request, count, body);
  };

  return {
    answer,
    declined(request, raw) {
      const decision = decisions.get(request);
      if (decision !== undefined) rememberDecision(raw, decision);
    },
  };
}
