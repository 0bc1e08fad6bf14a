/** Starts bench/ceiling.mjs (raw node:http) or bench/fastify-floor.mjs in its own process, answering `bytes` with `contentType`. */
import { fileURLToPath } from 'node:url';
import { forkTracked, stopChild, waitForMessage } from './children.mjs';

const SCRIPTS = {
  ceiling: fileURLToPath(new URL('../ceiling.mjs', import.meta.url)),
  fastify: fileURLToPath(new URL('../fastify-floor.mjs', import.meta.url)),
};

export function startCeiling({ bytes, contentType, path = '/graphql' }) {
  return startFixedAnswer(SCRIPTS.ceiling, { bytes, contentType, path });
}

/** Fastify answering the same bytes (POST only): what a hit costs at the least on this framework. */
export function startFastifyFloor({ bytes, contentType, path = '/graphql' }) {
  return startFixedAnswer(SCRIPTS.fastify, { bytes, contentType, path });
}

async function startFixedAnswer(script, { bytes, contentType, path }) {
  const child = forkTracked(script);
  child.send({ body: Buffer.from(bytes).toString('base64'), contentType });
  const { port } = await waitForMessage(child, (m) => m?.type === 'listening');
  const url = `http://127.0.0.1:${port}`;
  return { url, graphqlUrl: `${url}${path}`, port, child, stop: () => stopChild(child) };
}
