import type { FastifyInstance } from 'fastify';
import { ASSET_PREFIX, graphiqlAssets } from './assets.js';

/**
 * Serves the GraphiQL page's scripts and stylesheets at `/graphiql/<name>.<hash>.<ext>`.
 * Registered outside production only (src/app.ts), so there they do not exist. Names are
 * content-hashed, so each answer may be cached for a year; any other name is a 404.
 */
const IMMUTABLE = 'public, max-age=31536000, immutable';

export async function graphiqlAssetsPlugin(app: FastifyInstance): Promise<void> {
  app.get<{ Params: { name: string } }>(`${ASSET_PREFIX}:name`, async (request, reply) => {
    const asset = graphiqlAssets().byName.get(request.params.name);
    if (!asset) return reply.callNotFound();
    return reply
      .type(asset.type)
      .header('cache-control', IMMUTABLE)
      .header('x-content-type-options', 'nosniff')
      .header('cross-origin-resource-policy', 'same-origin')
      .send(asset.body);
  });
}
