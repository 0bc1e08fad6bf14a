import { z } from 'zod';

/**
 * The environment, parsed once at start-up. Core code receives a `Config` and never
 * reads `process.env` itself, so tests can build apps with any configuration.
 */

const intFrom = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const providerIdPattern = /^OAUTH_([A-Z0-9_]+?)_(ISSUER|CLIENT_ID|CLIENT_SECRET)$/;

const baseSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: intFrom(0, 65535).default(4000),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .default('file:./data/inkwell.db')
    .refine((v) => v.startsWith('file:') || /^postgres(ql)?:\/\//.test(v), {
      message: 'must start with file: (SQLite) or postgres:// (PostgreSQL)',
    }),
  DATABASE_POOL_SIZE: intFrom(1, 1000).default(10),
  DATABASE_STATEMENT_TIMEOUT_MS: intFrom(100, 3_600_000).default(15_000),
  DATABASE_PREPARED_STATEMENTS: z.enum(['on', 'off']).default('on'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  REDIS_KEY_PREFIX: z.string().max(100).default('inkwell:'),
  REDIS_COMMAND_TIMEOUT_MS: intFrom(50, 60_000).default(1_000),
  HTTP_REQUEST_TIMEOUT_MS: intFrom(1_000, 3_600_000).default(60_000),
  AUTH_SECRET: z.string().optional(),
  PUBLIC_URL: z.url().optional(),
  BCRYPT_COST: intFrom(4, 31).default(12),
  /** bcrypt operations at once; default: the number of cores (hashing threads run at the lowest priority). */
  BCRYPT_CONCURRENCY: intFrom(1, 1024).optional(),
  RATE_LIMIT_MAX: intFrom(1, 1_000_000_000).default(100),
  RATE_LIMIT_WINDOW_MS: intFrom(1, 86_400_000).default(60_000),
  /** Each caller's bucket of query cost, and the points it regains per second (docs/limits.md, "Cost"). */
  COST_LIMIT: intFrom(1, 1_000_000_000).default(10_000),
  COST_RESTORE_PER_S: intFrom(1, 1_000_000_000).default(200),
  QUERY_MAX_DEPTH: intFrom(1, 1000).default(7),
  QUERY_MAX_COMPLEXITY: intFrom(1, 100_000_000).default(1000),
  /** Operations costing at least this take turns, QUERY_HEAVY_CONCURRENCY at once (docs/limits.md). */
  QUERY_HEAVY_COST: intFrom(1, 100_000_000).default(500),
  QUERY_HEAVY_CONCURRENCY: intFrom(1, 1024).default(1),
  /** How many heavy operations may wait for their turn, and for how long (docs/limits.md). */
  QUERY_HEAVY_QUEUE: intFrom(0, 1_000_000).default(100),
  QUERY_HEAVY_WAIT_MS: intFrom(1, 3_600_000).default(10_000),
  PERSISTED_QUERIES: z.enum(['on', 'only', 'off']).default('on'),
  /** Memory for persisted query documents per instance (docs/limits.md). */
  PERSISTED_QUERIES_MB: intFrom(1, 4096).default(16),
  /** Event-loop lag above which new requests are shed with 503 (docs/limits.md). */
  // 0: never shed for lag (a loop blocked for a whole sample reads as infinite lag).
  OVERLOAD_EVENT_LOOP_DELAY_MS: intFrom(0, 600_000)
    .refine((ms) => ms === 0 || ms >= 10, 'must be 0 (off) or at least 10')
    .default(1_000),
  /** WebSocket (and SSE) connections per client address (0 = no cap) and per instance. */
  WS_MAX_CONNECTIONS_PER_CLIENT: intFrom(0, 10_000_000).default(100),
  WS_MAX_CONNECTIONS: intFrom(1, 10_000_000).default(10_000),
  /** A response whose client accepts no bytes this long is cut (docs/limits.md). */
  HTTP_SEND_TIMEOUT_MS: intFrom(100, 3_600_000).default(30_000),
  PERSISTED_QUERIES_MANIFEST: z.string().min(1).optional(),
  TRUST_PROXY: z.enum(['true', 'false']).default('false'),
  RESPONSE_CACHE_MB: intFrom(0, 4096).default(32),
  SEED_DEMO_DATA: z.enum(['auto', 'never']).default('auto'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  CORS_ORIGINS: z.string().default('').transform(parseOrigins),
  /** Bearer token for GET /metrics outside development (docs: README, "Observability"). */
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  /** OTLP/HTTP base URL; traces go to `<url>/v1/traces`. Unset: no tracing at all. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
});

/**
 * `CORS_ORIGINS`: comma-separated exact origins (`scheme://host[:port]`), written as
 * browsers send them in `Origin` (lower case, no default port, no path). Credentials go
 * with every allowed origin, so a wildcard or `null` (sandboxed pages, files) is refused.
 */
function parseOrigins(value: string, ctx: z.RefinementCtx): string[] {
  const origins: string[] = [];
  for (const entry of value.split(',').map((e) => e.trim()).filter(Boolean)) {
    const problem = originProblem(entry);
    if (problem) ctx.addIssue({ code: 'custom', message: `"${entry}" ${problem}` });
    else origins.push(entry);
  }
  return origins;
}

function originProblem(entry: string): string | undefined {
  if (entry === '*' || entry === 'null') return 'is not allowed: list exact origins (credentials are sent)';
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return 'is not an origin (scheme://host[:port])';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https origin';
  if (url.origin !== entry) return `is not an origin as browsers send it (did you mean "${url.origin}"?)`;
  return undefined;
}

export interface OAuthProviderConfig {
  /** Lower-cased `<ID>` of `OAUTH_<ID>_*`. */
  id: string;
  kind: 'oidc' | 'github';
  issuer?: string;
  clientId: string;
  clientSecret: string;
}

export interface Config {
  env: 'development' | 'production' | 'test';
  isProduction: boolean;
  host: string;
  port: number;
  publicUrl: string;
  database:
    | { kind: 'sqlite'; file: string }
    | {
        kind: 'postgres';
        url: string;
        poolSize: number;
        /** How long one statement may run before PostgreSQL cancels it; default 15 s (src/db/connect.ts). */
        statementTimeoutMs?: number;
        /** Named (per-connection prepared) statements; off behind a pooler that cannot keep them (src/db/statement-names.ts). */
        preparedStatements?: boolean;
      };
  redisUrl: string | undefined;
  /** How long one Redis command may take before it fails (that use of Redis then degrades). */
  redisCommandTimeoutMs: number;
  /** A request head and body must have arrived this long after their first byte, else 408. */
  httpRequestTimeoutMs: number;
  /** Prefix of every Redis key and channel, so several deployments can share one Redis. */
  redisKeyPrefix: string;
  /** Undefined outside production when not configured: the app generates and keeps one. */
  authSecret: string | undefined;
  bcryptCost: number;
  /** Undefined: the number of cores (at least 1). */
  bcryptConcurrency: number | undefined;
  rateLimit: { max: number; windowMs: number };
  /** Each caller's bucket of query cost (`limit` points) and its refill (points per second). */
  cost: { limit: number; restorePerSecond: number };
  limits: { maxDepth: number; maxComplexity: number; maxTokens: number; maxAliases: number };
  /**
   * Operations of at least `minCost` execute `concurrency` at a time; at most `queue` wait,
   * each at most `waitMs` (docs/limits.md).
   */
  heavy: { minCost: number; concurrency: number; queue: number; waitMs: number };
  persistedQueries: 'on' | 'only' | 'off';
  /** A trusted-documents file served in every mode (the allow-list in `only`). */
  persistedQueriesManifest: string | undefined;
  /** Memory for persisted query documents in this process (least recently used dropped). */
  persistedQueriesBytes: number;
  /** New requests are shed (503 OVERLOADED) while the event loop lags more than this. */
  overloadEventLoopDelayMs: number;
  /** Open WebSocket/SSE connections per client address (0 = no cap) and per instance. */
  connections: { perClient: number; perInstance: number };
  /** A response whose client accepts no bytes this long is cut, its buffer freed. */
  httpSendTimeoutMs: number;
  /** Take the client address from X-Forwarded-For (only behind a proxy you run). */
  trustProxy: boolean;
  /** Memory for whole-response caching of queries, per instance; 0 turns it off. */
  responseCacheBytes: number;
  seedDemoData: boolean;
  logLevel: string;
  /** `GET /metrics` outside development needs it as a bearer token; unset there: 404. */
  metricsToken: string | undefined;
  /** OTLP/HTTP base URL of the trace collector; undefined: tracing off. */
  otlpEndpoint: string | undefined;
  oauthProviders: OAuthProviderConfig[];
  /** Browser origins allowed to call /graphql and /api/* with credentials (src/http/cors.ts). */
  cors: { origins: string[]; allowLoopback: boolean };
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Every problem is gathered before one ConfigError names them all (docs/operations.md):
  // the schema's own, and the rules across variables, which read the raw values.
  const parsed = baseSchema.safeParse(env);
  const problems: string[] = parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  const isProduction = (env.NODE_ENV ?? 'development') === 'production';
  const authSecret = env.AUTH_SECRET;
  if (authSecret !== undefined && Buffer.byteLength(authSecret, 'utf8') < 32) {
    problems.push('AUTH_SECRET: must be at least 32 bytes');
  }
  if (isProduction && authSecret === undefined) {
    problems.push('AUTH_SECRET: required in production (at least 32 bytes)');
  }
  if (isProduction && parsed.success && parsed.data.BCRYPT_COST < 10) {
    problems.push('BCRYPT_COST: below 10 is refused in production');
  }
  const oauthProviders = parseOAuthProviders(env, isProduction, problems);
  if (!parsed.success || problems.length > 0) throw new ConfigError(problems);
  const e = parsed.data;
  const database: Config['database'] = e.DATABASE_URL.startsWith('file:')
    ? { kind: 'sqlite', file: e.DATABASE_URL.slice('file:'.length) }
    : {
        kind: 'postgres',
        url: e.DATABASE_URL,
        poolSize: e.DATABASE_POOL_SIZE,
        statementTimeoutMs: e.DATABASE_STATEMENT_TIMEOUT_MS,
        preparedStatements: e.DATABASE_PREPARED_STATEMENTS === 'on',
      };

  const publicUrl = (e.PUBLIC_URL ?? `http://${formatHost(e.HOST)}:${e.PORT}`).replace(/\/+$/, '');

  return {
    env: e.NODE_ENV,
    isProduction,
    host: e.HOST,
    port: e.PORT,
    publicUrl,
    database,
    redisUrl: e.REDIS_URL,
    redisKeyPrefix: e.REDIS_KEY_PREFIX,
    redisCommandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    httpRequestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
    authSecret: e.AUTH_SECRET,
    bcryptCost: e.BCRYPT_COST,
    bcryptConcurrency: e.BCRYPT_CONCURRENCY,
    rateLimit: { max: e.RATE_LIMIT_MAX, windowMs: e.RATE_LIMIT_WINDOW_MS },
    cost: { limit: e.COST_LIMIT, restorePerSecond: e.COST_RESTORE_PER_S },
    limits: {
      maxDepth: e.QUERY_MAX_DEPTH,
      maxComplexity: e.QUERY_MAX_COMPLEXITY,
      maxTokens: 2000,
      maxAliases: 30,
    },
    heavy: { minCost: e.QUERY_HEAVY_COST, concurrency: e.QUERY_HEAVY_CONCURRENCY, queue: e.QUERY_HEAVY_QUEUE, waitMs: e.QUERY_HEAVY_WAIT_MS },
    persistedQueries: e.PERSISTED_QUERIES,
    persistedQueriesManifest: e.PERSISTED_QUERIES_MANIFEST,
    persistedQueriesBytes: e.PERSISTED_QUERIES_MB * 1024 * 1024,
    overloadEventLoopDelayMs: e.OVERLOAD_EVENT_LOOP_DELAY_MS,
    connections: { perClient: e.WS_MAX_CONNECTIONS_PER_CLIENT, perInstance: e.WS_MAX_CONNECTIONS },
    httpSendTimeoutMs: e.HTTP_SEND_TIMEOUT_MS,
    trustProxy: e.TRUST_PROXY === 'true',
    responseCacheBytes: e.RESPONSE_CACHE_MB * 1024 * 1024,
    seedDemoData: e.SEED_DEMO_DATA === 'auto' && !isProduction,
    logLevel: e.LOG_LEVEL,
    metricsToken: e.METRICS_TOKEN,
    otlpEndpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
    oauthProviders,
    // Outside production, a local front-end on any port of localhost or 127.0.0.1 too.
    cors: { origins: e.CORS_ORIGINS, allowLoopback: !isProduction },
  };
}

function formatHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function parseOAuthProviders(
  env: Record<string, string | undefined>,
  isProduction: boolean,
  problems: string[],
): OAuthProviderConfig[] {
  const ids = new Set<string>();
  for (const key of Object.keys(env)) {
    const match = providerIdPattern.exec(key);
    if (match?.[1] && env[key]) ids.add(match[1]);
  }
  const providers: OAuthProviderConfig[] = [];
  for (const ID of [...ids].sort()) {
    const issuer = env[`OAUTH_${ID}_ISSUER`];
    const clientId = env[`OAUTH_${ID}_CLIENT_ID`];
    const clientSecret = env[`OAUTH_${ID}_CLIENT_SECRET`];
    if (!clientId) problems.push(`OAUTH_${ID}_CLIENT_ID: required when other OAUTH_${ID}_* variables are set`);
    if (!clientSecret) problems.push(`OAUTH_${ID}_CLIENT_SECRET: required when other OAUTH_${ID}_* variables are set`);
    if (ID === 'GITHUB' && !issuer) {
      if (clientId && clientSecret) providers.push({ id: 'github', kind: 'github', clientId, clientSecret });
      continue;
    }
    if (!issuer) {
      problems.push(`OAUTH_${ID}_ISSUER: required for an OpenID Connect provider`);
      continue;
    }
    let url: URL | undefined;
    try {
      url = new URL(issuer);
    } catch {
      problems.push(`OAUTH_${ID}_ISSUER: not a URL`);
      continue;
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && !isProduction)) {
      problems.push(`OAUTH_${ID}_ISSUER: must be https (http is accepted outside production only)`);
      continue;
    }
    if (clientId && clientSecret) {
      providers.push({ id: ID.toLowerCase(), kind: 'oidc', issuer, clientId, clientSecret });
    }
  }
  return providers;
}
