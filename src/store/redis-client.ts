import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';

/**
 * How every Inkwell Redis connection behaves. Redis is a shared accelerator, not the
 * system of record, so a call must never wait for it: while it is down every command
 * fails at once (no offline queue, one retry, short timeouts) and the caller degrades
 * (README, "When Redis is down"). The connection itself keeps reconnecting with capped
 * backoff, so everything resumes without a restart once Redis is back. A Redis that
 * stops answering without closing the connection is found by a watchdog (below).
 */
export const REDIS_CONNECT_TIMEOUT_MS = 2_000;
/** Default of REDIS_COMMAND_TIMEOUT_MS. */
export const REDIS_COMMAND_TIMEOUT_MS = 1_000;
const MAX_BACKOFF_MS = 2_000;
/** How often the watchdog pings a ready connection. */
const WATCHDOG_INTERVAL_MS = 1_000;

export interface RedisConnectionEvents {
  /** The connection went from ready to not ready (logged once per outage, not per command). */
  onDown?(name: string, error: Error | undefined): void;
  /** Ready again after an outage. */
  onUp?(name: string): void;
}

export interface RedisConnectionOptions {
  /** A command not answered within this fails (default REDIS_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs?: number;
}

/**
 * `ioredis` loads with the first connection: a service without REDIS_URL never loads it
 * (~60 ms of CPU at each start; docs/decisions.md, "Start-up"). Through `require`, where
 * tracing's instrumentation patches it as it loads.
 */
const loadRedis = (): typeof Redis => (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis;

export function connectRedis(
  url: string,
  name: string,
  events: RedisConnectionEvents = {},
  options: RedisConnectionOptions = {},
): Redis {
  const commandTimeoutMs = options.commandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_MS;
  const client = new (loadRedis())(url, {
    connectionName: `inkwell-${name}`,
    // Off: an auto-pipeline is an ioredis Pipeline, which lives until a full collection
    // (docs/decisions.md, "Nothing per request lives until a full collection"). The hot
    // path's commands go out together anyway (src/store/redis-turn.ts).
    enableAutoPipelining: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: REDIS_CONNECT_TIMEOUT_MS,
    commandTimeout: commandTimeoutMs,
    // Re-subscription is ours (RedisPubSub re-subscribes every wanted channel on
    // 'ready'); ioredis's own only covers channels whose SUBSCRIBE had been confirmed.
    autoResubscribe: false,
    // Never give up: 100 ms, 200 ms, … capped at 2 s, with jitter so instances spread out.
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times - 1, 5), MAX_BACKOFF_MS) * (0.75 + Math.random() / 2),
  });
  // Reported once per outage: 'close' also fires after every failed reconnect attempt.
  let up = false;
  let everUp = false;
  let lastError: Error | undefined;
  // Without an 'error' listener ioredis prints every failed reconnect to the console.
  client.on('error', (error: Error) => (lastError = error));
  client.on('ready', () => {
    if (everUp && !up) events.onUp?.(name);
    up = true;
    everUp = true;
  });
  client.on('close', () => {
    if (!up) return;
    up = false;
    if (client.status !== 'end') events.onDown?.(name, lastError);
  });
  watch(client, (error) => (lastError = error));
  return client;
}

/**
 * A Redis that is paused (SIGSTOP), swapping hard or behind a network that drops
 * packets keeps its TCP connection open: the connection stays "ready" and every command
 * waits its full timeout, so each request would wait once per Redis call. The watchdog
 * pings a ready connection every second; a ping that times out drops the connection
 * and reconnects. Until the reconnection is ready, calls fail at once and their users
 * degrade as when Redis is down; once Redis answers again, the connection is ready
 * again and everything resumes. (A ping in subscriber mode is allowed and answered.)
 */
function watch(client: Redis, onStall: (error: Error) => void): void {
  let pinging = false;
  const timer = setInterval(() => {
    if (pinging || client.status !== 'ready') return;
    pinging = true;
    client
      .ping()
      .catch((error: unknown) => {
        if (!(error instanceof Error) || error.message !== 'Command timed out' || client.status !== 'ready') return;
        onStall(error);
        client.disconnect(true);
      })
      .finally(() => (pinging = false));
  }, WATCHDOG_INTERVAL_MS);
  timer.unref();
  client.once('end', () => clearInterval(timer));
}

/** Resolves once every client is ready, or after `timeoutMs` (start-up goes on degraded). */
export async function waitReady(clients: readonly Redis[], timeoutMs: number): Promise<boolean> {
  const ready = (client: Redis) =>
    client.status === 'ready' ? Promise.resolve() : new Promise<void>((resolve) => client.once('ready', () => resolve()));
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  const result = await Promise.race([Promise.all(clients.map(ready)).then(() => true as const), timeout]);
  clearTimeout(timer);
  return result;
}

/** Closes a connection politely when it is up, at once otherwise. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // fall through: drop the socket
    }
  }
  client.disconnect();
}
