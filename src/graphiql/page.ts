import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import { escapeHtml } from '../auth/pages/html.js';
import { graphiqlAssets, type AssetSet } from './assets.js';

/**
 * The GraphiQL page answered on `GET /graphql` to a browser, outside production only.
 * Everything it loads comes from our origin (the assets plugin); it holds no inline
 * script or style, and its Content-Security-Policy lets it reach nothing but this origin.
 */

/**
 * The policy for one response. GraphiQL's dialogs lock page scrolling with one `<style>`
 * element built at run time (react-remove-scroll, its content depends on the scrollbar
 * width, so no hash fits); it carries the nonce found in `__webpack_nonce__`, which the
 * bootstrap sets from its own `<script nonce>`. No `'unsafe-inline'` anywhere.
 * `connect-src 'self'` covers the WebSocket on this host too (CSP 3 matches ws:/wss:).
 * Fonts and icons are data: URIs inside GraphiQL's stylesheet.
 */
export function graphiqlCsp(nonce: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * What the query editor holds on a first visit (GraphiQL's `defaultQuery`; later visits
 * reopen the tabs the browser kept): a query of the demo data that explains itself,
 * instead of GraphiQL's generic welcome text. Handed to the bootstrap in a data attribute.
 */
let example: string | undefined;
export function exampleQuery(): string {
  example ??= readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'client', 'example.graphql'), 'utf8');
  return example;
}

export function graphiqlHtml(assets: AssetSet, nonce: string): string {
  const styles = assets.styles.map((href) => `  <link rel="stylesheet" href="${href}">`).join('\n');
  // The bootstrap (last) hands the nonce on to GraphiQL's run-time style element.
  const scripts = assets.scripts
    .map((src, i) => (i === assets.scripts.length - 1 ? `  <script nonce="${nonce}" src="${src}"></script>` : `  <script src="${src}"></script>`))
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Inkwell — GraphiQL</title>
  <link rel="icon" href="data:,">
${styles}
</head>
<body>
  <div id="graphiql" data-default-query="${escapeHtml(exampleQuery())}">Loading GraphiQL…</div>
${scripts}
</body>
</html>
`;
}

/** Answers with the page: a fresh nonce each time, so it is never stored. */
export function sendGraphiQL(reply: FastifyReply): FastifyReply {
  const nonce = randomBytes(16).toString('base64');
  return reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', graphiqlCsp(nonce))
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .send(graphiqlHtml(graphiqlAssets(), nonce));
}
