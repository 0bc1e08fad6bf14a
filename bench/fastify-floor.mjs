/**
 * The framework's floor: Fastify, as Inkwell and the reference run it (pino at `warn`,
 * the body read as text and parsed as JSON), answering every POST /graphql with the same
 * bytes the service answered, without any GraphQL work. Beside a response-cache hit it
 * shows what the hit costs above Fastify itself (bench/hits/). Configured over IPC like
 * bench/ceiling.mjs: parent → { body: base64, contentType } ; child → { type: 'listening', port }
 */
import Fastify from 'fastify';

process.once('message', async ({ body, contentType, host = '127.0.0.1' }) => {
  const bytes = Buffer.from(body, 'base64');
  const app = Fastify({ logger: { level: 'warn' } });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, text, done) => done(null, text));
  app.post('/graphql', (request, reply) => {
    JSON.parse(request.body);
    return reply.type(contentType).send(bytes);
  });
  await app.listen({ port: 0, host });
  process.send({ type: 'listening', port: app.server.address().port });
  process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
  process.once('disconnect', () => process.exit(0));
});
