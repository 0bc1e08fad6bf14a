import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The files the GraphiQL page loads, all from our own origin: the browser builds that
 * the pinned npm packages ship (React 18 and GraphiQL 4 UMD, graphql-ws's UMD client)
 * and our two small files in `client/`. Read once, served from memory under a
 * content-hashed name, so a browser may cache them for good.
 */

export const ASSET_PREFIX = '/graphiql/';

export interface Asset {
  /** The served name, e.g. `react.1a2b3c4d5e6f.js`. */
  name: string;
  type: string;
  body: Buffer;
}

export interface AssetSet {
  /** Script URLs in load order: React, ReactDOM, graphql-ws, GraphiQL, then our bootstrap. */
  scripts: string[];
  styles: string[];
  byName: Map<string, Asset>;
}

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));

/** A file inside an installed package (by its package.json, which every exports map allows). */
function fromPackage(pkg: string, file: string): string {
  return join(dirname(require.resolve(`${pkg}/package.json`)), file);
}

const SOURCES: { stem: string; kind: 'script' | 'style'; path: () => string }[] = [
  { stem: 'react', kind: 'script', path: () => fromPackage('react', 'umd/react.production.min.js') },
  { stem: 'react-dom', kind: 'script', path: () => fromPackage('react-dom', 'umd/react-dom.production.min.js') },
  { stem: 'graphql-ws', kind: 'script', path: () => fromPackage('graphql-ws', 'umd/graphql-ws.min.js') },
  { stem: 'graphiql', kind: 'script', path: () => fromPackage('graphiql', 'graphiql.min.js') },
  { stem: 'bootstrap', kind: 'script', path: () => join(here, 'client', 'bootstrap.js') },
  { stem: 'graphiql', kind: 'style', path: () => fromPackage('graphiql', 'graphiql.min.css') },
  { stem: 'page', kind: 'style', path: () => join(here, 'client', 'page.css') },
];

const TYPES = { script: 'text/javascript; charset=utf-8', style: 'text/css; charset=utf-8' } as const;

export function loadAssets(): AssetSet {
  const set: AssetSet = { scripts: [], styles: [], byName: new Map() };
  for (const source of SOURCES) {
    const body = readFileSync(source.path());
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
    const name = `${source.stem}.${hash}.${source.kind === 'script' ? 'js' : 'css'}`;
    set.byName.set(name, { name, type: TYPES[source.kind], body });
    (source.kind === 'script' ? set.scripts : set.styles).push(ASSET_PREFIX + name);
  }
  return set;
}

let loaded: AssetSet | undefined;

/** The assets of this installation: the files do not change while the process runs. */
export function graphiqlAssets(): AssetSet {
  loaded ??= loadAssets();
  return loaded;
}
