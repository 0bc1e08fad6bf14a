import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HTTP_REFUSALS, refusalBody } from '../errors.js';

/**
 * Two rules every HTTP request meets at its first hook (docs/limits.md, "HTTP hygiene"):
 *
 * - More than one `Host` header is refused with 400 (RFC 9112, section 3.2): node:http
 *   keeps the first, a proxy in front may have routed by another.
 * - A response to a request that carries a credential (`Authorization`, or the session
 *   cookies) says `Cache-Control: private, no-store`, so no shared cache in front stores
 *   one caller's answer for another. Routes that set their own policy for bytes that are
 *   the same for everyone (static assets) keep theirs.
 */

export const PRIVATE_NO_STORE = 'private, no-store';

/** Registered at the root, first, so every route and every refusal is covered. */
export function httpHygiene(app: FastifyInstance, options: { credentialCookies: readonly string[] }): void {
  const cookieMarks = options.credentialCookies.map((name) => `${name}=`);
  app.addHook('onRequest', (request, reply, done) => {
    if (hasDuplicateHost(request.raw.rawHeaders)) return refuseDuplicateHost(request, reply);
    if (carriesCredential(request.headers, cookieMarks)) reply.header('cache-control', PRIVATE_NO_STORE);
    done();
  });
}

/** True when `Host` appears more than once among a request's raw header lines (also used at the WebSocket upgrade). */
export function hasDuplicateHost(rawHeaders: readonly string[]): boolean {
  let seen = false;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') {
      if (seen) return true;
      seen = true;
    }
  }
  return false;
}

function carriesCredential(headers: FastifyRequest['headers'], cookieMarks: readonly string[]): boolean {
  if (headers.authorization !== undefined) return true;
  const cookie = headers.cookie;
  return cookie !== undefined && cookieMarks.some((mark) => cookie.includes(mark));
}

function refuseDuplicateHost(request: FastifyRequest, reply: FastifyReply): void {
  const refusal = HTTP_REFUSALS.duplicateHost;
  const body = refusalBody(request.url.split('?', 1)[0] ?? '', refusal);
  void reply.code(refusal.status).header('connection', 'close').type('application/json; charset=utf-8').send(JSON.stringify(body));
}
