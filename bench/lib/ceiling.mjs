/** Starts bench/ceiling.mjs in its own process, answering `bytes` with `contentType`. */
import { fileURLToPath } from 'node:url';
import { forkTracked, stopChild, waitForMessage } from './children.mjs';

const SCRIPT = fileURLToPath(new URL('../ceiling.mjs', import.meta.url));

export async function startCeiling({ bytes, contentType, path = '/graphql' }) {
  const child = forkTracked(SCRIPT);
  child.send({ body: Buffer.from(bytes).toString('base64'), contentType });
  const { port } = await waitForMessage(child, (m) => m?.type === 'listening');
  const url = `http://127.0.0.1:${port}`;
  return { url, graphqlUrl: `${url}${path}`, port, child, stop: () => stopChild(child) };
}
