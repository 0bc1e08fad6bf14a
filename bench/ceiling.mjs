/**
 * The ceiling: a raw node:http server, in its own process, that answers every request
 * with the same bytes the service answered, without any GraphQL work. It drains the
 * request body first, like a real server. Configured over IPC:
 *   parent → { body: base64, contentType } ; child → { type: 'listening', port }
 */
import { createServer } from 'node:http';

process.once('message', ({ body, contentType, host = '127.0.0.1' }) => {
  const bytes = Buffer.from(body, 'base64');
  const headers = { 'content-type': contentType, 'content-length': String(bytes.length) };
  const server = createServer((req, res) => {
    req.on('data', () => {});
    req.on('end', () => {
      res.writeHead(200, headers);
      res.end(bytes);
    });
  });
  server.keepAliveTimeout = 72_000;
  server.listen(0, host, () => process.send({ type: 'listening', port: server.address().port }));
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
  process.once('disconnect', () => process.exit(0));
});
