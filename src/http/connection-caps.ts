import { normalizeIp } from '../rate-limit/limiter.js';

/**
 * Caps on long-lived connections (docs/limits.md, "Connections"): at most `perClient`
 * open at once from one client address (0 = no cap) and `perInstance` in all. Every
 * transport that holds a connection open (the WebSocket today, Server-Sent Events next)
 * acquires a place before it accepts one and releases it when the connection closes, so
 * they count against the same caps. The client is counted by its address as the rate
 * limits count it (IPv6 by its /64); a signed-in user is not known yet at the upgrade.
 */

export interface ConnectionLimits {
  /** Open connections per client address; 0: no cap. */
  perClient: number;
  perInstance: number;
}

/** A connection admitted: `release` gives its place back (idempotent). */
export interface Admitted {
  admitted: true;
  release(): void;
}

/** Refused at once: 429 when the client holds its share, 503 when the instance is full. */
export interface Refused {
  admitted: false;
  status: 429 | 503;
  retryAfterSeconds: number;
  error: string;
}

/**
 * No estimate exists of when a client closes one of its connections: a fixed wait
 * that keeps a reconnecting client from hammering the upgrade.
 */
export const CONNECTION_RETRY_AFTER_SECONDS = 10;

export class ConnectionCaps {
  private readonly byClient = new Map<string, number>();
  private open = 0;
  private refusedPerClient = 0;
  private refusedPerInstance = 0;

  constructor(private readonly limits: ConnectionLimits) {}

  /** `ip` as the request shows it (request.ip semantics: X-Forwarded-For behind TRUST_PROXY). */
  acquire(ip: string): Admitted | Refused {
    const { perClient, perInstance } = this.limits;
    // Without a per-client cap nothing is counted per client: no map to keep.
    const client = perClient > 0 ? normalizeIp(ip) : undefined;
    const held = client === undefined ? 0 : (this.byClient.get(client) ?? 0);
    if (client !== undefined && held >= perClient) {
      this.refusedPerClient++;
      return refused(429, `At most ${perClient} open connections per client`);
    }
    if (this.open >= perInstance) {
      this.refusedPerInstance++;
      return refused(503, 'Too many open connections on this instance; retry later');
    }
    this.open++;
    if (client !== undefined) this.byClient.set(client, held + 1);
    let released = false;
    return {
      admitted: true,
      release: () => {
        if (released) return;
        released = true;
        this.open--;
        if (client === undefined) return;
        const left = (this.byClient.get(client) ?? 1) - 1;
        if (left > 0) this.byClient.set(client, left);
        else this.byClient.delete(client);
      },
    };
  }

  /** Places held, distinct clients holding them, and refusals so far. */
  stats(): { open: number; clients: number; refusedPerClient: number; refusedPerInstance: number } {
    return { open: this.open, clients: this.byClient.size, refusedPerClient: this.refusedPerClient, refusedPerInstance: this.refusedPerInstance };
  }
}

function refused(status: 429 | 503, error: string): Refused {
  return { admitted: false, status, retryAfterSeconds: CONNECTION_RETRY_AFTER_SECONDS, error };
}
