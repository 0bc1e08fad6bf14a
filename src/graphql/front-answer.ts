import { LRUCache } from 'lru-cache';
import { AUTH_COOKIE } from '../auth/cookies.js';
import { clientKey, limiterKey, windowDecision, type Counters, type WindowCount } from '../auth/rate-limit.js';
import { ANONYMOUS } from '../domain/caller.js';
import type { CacheProbe } from './cache-probe.js';
import type { Answered, FrontAnswer, FrontRequest, FrontResponse } from './front-door.js';
import { acceptedMediaType, contentTypeOf, isAcceptable } from './media.js';
import { wantsHtml } from './request-params.js';
import type { ResponseCache } from './response-cache.js';
import { clientIp } from './ws-auth.js';

/**
 * What the front door (src/graphql/front-door.ts) may answer itself: an anonymous query
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
 * The request counts against the same `/graphql` counter as on the route (the same
 * key, `graphql:ip:<address>`), once: a miss or a refusal is declined before counting,
 * and a client over its limit is declined after, so the route counts it again past
 * the limit (which changes nothing) and answers the 429.
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

  // Synchronous while everything it needs is in this process (one instance): a hit then
  // costs no promise at all; with Redis the same steps run asynchronously.
  const respond = (request: FrontRequest, body: Buffer): Answered => {
    const key = limiterKey('graphql', clientKey(ANONYMOUS, clientIp(request.raw, trustProxy)));
    const counted = counters.hitNow?.(key, rateLimit.windowMs);
    if (counted) return answerWith(request, body, counted);
    return counters.hit(key, rateLimit.windowMs).then((count) => answerWith(request, body, count));
  };

  const answerWith = (request: FrontRequest, body: Buffer, count: WindowCount): FrontResponse | undefined => {
    const decision = windowDecision(rateLimit.max, count);
    if (!decision.allowed) return undefined;
    const headers = {
      'x-ratelimit-limit': decision.limit,
      'x-ratelimit-remaining': decision.remaining,
      'x-ratelimit-reset': decision.retryAfterSeconds,
      'content-type': contentTypeOf(acceptedMediaType(request.headers.accept)),
      'content-length': body.length,
    };
    return { status: 200, headers, body };
  };

  const probeFirst = async (request: FrontRequest, text: string): Promise<FrontResponse | undefined> => {
    const { method, headers } = request;
    if (!isAcceptable(headers.accept)) return undefined;
    if (!isProduction && method === 'GET' && wantsHtml(request)) return undefined;
    const found = await probe.probe(request, ANONYMOUS);
    if (found === undefined || !('hit' in found)) return undefined;
    if (found.repeatable) seen.set(text, { method, accept: headers.accept, contentType: headers['content-type'], cacheKey: found.key });
    return respond(request, found.hit);
  };

  return (request) => {
    const { method, headers } = request;
    if (headers.authorization !== undefined || headers.cookie?.includes(AUTH_COOKIE)) return undefined;
    const text = request.body ?? request.url;
    const known = seen.get(text);
    if (!known || known.method !== method || known.accept !== headers.accept || known.contentType !== headers['content-type']) {
      return probeFirst(request, text);
    }
    // Seen and mapped: a current entry is the answer; otherwise the route executes it.
    const body = cache.hit(known.cacheKey);
    if (body instanceof Promise) return body.then((current) => current && respond(request, current));
    return body && respond(request, body);
  };
}
