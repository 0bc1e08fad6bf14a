import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { KeyValueStore } from '../../store/kv.js';
import { entryBytes } from '../../store/memory.js';
import { BadRequest, PersistedQueryNotAllowed, PersistedQueryNotFound } from './errors.js';

/**
 * Automatic persisted queries (Apollo's protocol: `extensions.persistedQuery =
 * {version: 1, sha256Hash}`). Mode `on` registers any valid document sent with its
 * hash; `only` is a trusted-documents allow-list: the manifest (and documents already
 * in the shared store) are served, nothing new is accepted; `off` ignores hashes.
 */
export type PersistedMode = 'on' | 'only' | 'off';

const KEY_PREFIX = 'apq:';
const TTL_MS = 7 * 24 * 60 * 60 * 1000;
const HASH_PATTERN = /^[0-9a-f]{64}$/;
/**
 * A document larger than this share of PERSISTED_QUERIES_MB is executed but not
 * registered (the client keeps sending its text): a few huge documents must not push
 * out every other client's (docs/limits.md, "Memory").
 */
const LARGEST_SHARE = 8;

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export interface ResolvedQuery {
  query: string;
  /** Set when the text should be stored under this hash once it has validated. */
  registerAs: string | undefined;
  /**
   * Whether the answer depended on what is registered (a hash looked up, the allow-list
   * consulted), so the same request may be answered differently later.
   */
  fromStore: boolean;
}

export interface PersistedOptions {
  /** PERSISTED_QUERIES_MB in bytes: the store's own budget, which also sets the largest document registered. */
  maxBytes?: number;
}

export class PersistedQueries {
  /** Bytes (as the in-process store counts them) of the largest document registered. */
  readonly maxDocumentBytes: number;

  constructor(
    private readonly store: KeyValueStore,
    readonly mode: PersistedMode,
    private readonly manifest: ReadonlyMap<string, string> = new Map(),
    options: PersistedOptions = {},
  ) {
    this.maxDocumentBytes = Math.floor((options.maxBytes ?? 16 * 1024 * 1024) / LARGEST_SHARE);
  }

  /** The query text to run when `resolve` needs no store (a plain query, no persisted-query extension); else undefined. */
  asSent(query: unknown, extensions: Record<string, unknown> | null | undefined): string | undefined {
    const persisted = this.mode === 'off' ? undefined : extensions?.['persistedQuery'];
    return (persisted === undefined || persisted === null) && this.mode !== 'only' && typeof query === 'string' ? query : undefined;
  }

  /** The query text to run, or a RequestError to answer with. */
  async resolve(query: unknown, extensions: Record<string, unknown> | null | undefined): Promise<ResolvedQuery> {
    const persisted = this.mode === 'off' ? undefined : extensions?.['persistedQuery'];
    if (persisted === undefined || persisted === null) {
      if (typeof query !== 'string') throw new BadRequest('Missing query');
      if (this.mode === 'only' && !(await this.lookup(sha256Hex(query)))) throw notAllowed();
      return { query, registerAs: undefined, fromStore: this.mode === 'only' };
    }
    const hash = parsePersisted(persisted);
    if (query === undefined || query === null) {
      const text = await this.lookup(hash);
      if (text === undefined) throw new PersistedQueryNotFound();
      return { query: text, registerAs: undefined, fromStore: true };
    }
    if (typeof query !== 'string') throw new BadRequest('Invalid query');
    if (sha256Hex(query) !== hash) throw new BadRequest('provided sha does not match query');
    if (this.mode === 'only') {
      if (!(await this.lookup(hash))) throw notAllowed();
      return { query, registerAs: undefined, fromStore: true };
    }
    return { query, registerAs: hash, fromStore: false };
  }

  /** Stores the document under its hash (for TTL_MS), unless it is too large to keep. */
  async register(hash: string, query: string): Promise<void> {
    const key = KEY_PREFIX + hash;
    if (entryBytes(key, query) > this.maxDocumentBytes) return;
    await this.store.set(key, query, TTL_MS);
  }

  private async lookup(hash: string): Promise<string | undefined> {
    return this.manifest.get(hash) ?? (await this.store.get(KEY_PREFIX + hash));
  }
}

function parsePersisted(value: unknown): string {
  if (typeof value !== 'object' || value === null) throw new BadRequest('Invalid persistedQuery extension');
  const { version, sha256Hash } = value as Record<string, unknown>;
  if (version !== 1) throw new BadRequest('Unsupported persisted query version');
  if (typeof sha256Hash !== 'string' || !HASH_PATTERN.test(sha256Hash)) {
    throw new BadRequest('persistedQuery.sha256Hash must be 64 hex characters');
  }
  return sha256Hash;
}

function notAllowed() {
  return new PersistedQueryNotAllowed();
}

/**
 * Reads a trusted-documents manifest: Apollo's `{format: "apollo-persisted-query-manifest",
 * operations: [{id, body}]}` or a plain `{"<sha256>": "<query>"}` object. Every hash is
 * checked against its text, so a wrong entry stops start-up instead of serving surprises.
 */
export function loadManifest(path: string): Map<string, string> {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as unknown;
  const entries: [string, string][] = [];
  if (typeof raw === 'object' && raw !== null && Array.isArray((raw as { operations?: unknown }).operations)) {
    for (const op of (raw as { operations: { id?: unknown; body?: unknown }[] }).operations) {
      entries.push([String(op.id), String(op.body)]);
    }
  } else if (typeof raw === 'object' && raw !== null) {
    for (const [hash, body] of Object.entries(raw)) entries.push([hash, String(body)]);
  } else {
    throw new Error('persisted query manifest must be a JSON object');
  }
  for (const [hash, body] of entries) {
    if (sha256Hex(body) !== hash) throw new Error(`persisted query manifest: hash ${hash} does not match its document`);
  }
  return new Map(entries);
}
