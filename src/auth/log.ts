import type { FastifyRequest } from 'fastify';

/**
 * The request log serializer: Fastify's usual fields, with the values of query
 * parameters that carry credentials replaced. An OAuth callback's URL holds the
 * authorization code and state; nothing of the kind may reach the log (the headers
 * that carry tokens are redacted by the logger's `redact` list in app.ts).
 */

const SENSITIVE = /[?&](code|state|token|access_token|refresh_token|id_token|password|csrfToken|client_secret)=/i;
const NAMES = new Set(['code', 'state', 'token', 'access_token', 'refresh_token', 'id_token', 'password', 'csrftoken', 'client_secret']);

export function scrubUrl(url: string): string {
  if (!SENSITIVE.test(url)) return url;
  const index = url.indexOf('?');
  const params = new URLSearchParams(url.slice(index + 1));
  for (const key of [...params.keys()]) if (NAMES.has(key.toLowerCase())) params.set(key, '[redacted]');
  return `${url.slice(0, index)}?${params.toString()}`;
}

export function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: scrubUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
