/**
 * An OTLP/HTTP endpoint that accepts every export and keeps nothing: the collector the
 * "tracing on" runs send their spans to, in its own process so its CPU is not the
 * service's. Reports its port, then counts the spans' bytes it swallowed on request.
 */
import { createServer } from 'node:http';

let exports = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (chunk) => (bytes += chunk.length));
  req.on('end', () => {
    exports++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
server.listen(0, '127.0.0.1', () => process.send({ type: 'listening', port: server.address().port }));
process.on('message', (m) => {
  if (m?.type === 'stats') process.send({ type: 'stats', exports, bytes });
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
