import type { Agent, IncomingHttpHeaders } from 'node:http';
import { request } from 'node:http';

/**
 * One request with node:http, for what fetch will not send: any method (HEAD, TRACE,
 * PROPFIND, QUERY…) and any header (Origin, Access-Control-Request-*). Answers the
 * status, the headers (lower-case names) and the body as text and, when it is JSON, parsed.
 */

export interface Sent {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any;
}

export function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string | Buffer,
  /** The connections to use (e.g. from one local address, test/helpers/from-address.ts). */
  agent?: Agent,
): Promise<Sent> {
  const url = new URL(path, base);
  // node:http frames a body of DELETE, OPTIONS or TRACE with neither length nor chunks.
  const framed = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: framed, ...(agent ? { agent } : {}) }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text, json });
      });
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The names of a comma-separated header, lower-cased. */
export function listOf(value: string | string[] | undefined): string[] {
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return joined
    .split(',')
    .map((v) => v.trim().toLowerCase())
    .filter(Boolean);
}

/** The `access-control-*` headers of a response. */
export function corsHeaders(sent: Sent): string[] {
  return Object.keys(sent.headers).filter((name) => name.startsWith('access-control-'));
}
