import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * What no route answers: 404 `{error: "Not found"}` for an unknown path, in place of
 * Fastify's `Route X not found`, before any body is read (a malformed body to nowhere is
 * still a 404). A known path asked with a method Fastify does not route at all
 * (PROPFIND, PURGE, …) lands here too; its owner answers that as its own wrong method
 * (`/graphql`: 405), so "any other method" holds for every method.
 */

export type MethodNotAllowed = (request: FastifyRequest, reply: FastifyReply) => FastifyReply;

/** Call at the root, after the CORS plugin (an allowed origin may read the 404). */
export function setNotFound(app: FastifyInstance, methodNotAllowed: Readonly<Record<string, MethodNotAllowed>>): void {
  const answer = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const path = request.url.split('?', 1)[0] ?? '';
    const owner = Object.hasOwn(methodNotAllowed, path) ? methodNotAllowed[path] : undefined;
    if (owner) return owner(request, reply);
    return reply.code(404).type('application/json; charset=utf-8').send(JSON.stringify({ error: 'Not found' }));
  };
  // Unrouted requests, at their first hook; the handler serves `reply.callNotFound()`.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) answer(request, reply);
    else done();
  });
  app.setNotFoundHandler(answer);
}
