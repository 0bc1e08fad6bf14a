import { expect } from 'vitest';
import WebSocket from 'ws';
import type { Caller } from '../../src/domain/caller.js';
import type { User } from '../../src/domain/types.js';
import { wsUrl, type TestServer } from '../helpers/server.js';

/**
 * What the cost tests share (docs/limits.md, "Cost"): data made through the services,
 * requests from a chosen client address (the servers trust X-Forwarded-For), a raw
 * graphql-transport-ws socket, and the check of a bucket's reading against the points
 * it may have regained meanwhile — never a timing.
 */

export interface Cost {
  requestedQueryCost: number;
  actualQueryCost: number | null;
  throttleStatus: { maximumAvailable: number; currentlyAvailable: number; restoreRate: number };
}

let counter = 0;
const system: Caller = { kind: 'user', id: 'fixture-admin', role: 'admin', sessionId: null };

/** `authors` users, the i-th with `postsEach[i]` published posts; returns them in order. */
export async function seed(server: TestServer, postsEach: readonly number[]): Promise<User[]> {
  const { services } = server.inkwell;
  const users: User[] = [];
  for (const count of postsEach) {
    const n = ++counter;
    const user = await services.users.insertAccount({ name: `Author ${n}`, email: `author${n}@example.test`, role: 'editor' });
    for (let i = 0; i < count; i++) {
      await services.posts.create(system, { title: `Post ${n}.${i}`, authorId: user.id, published: true, content: null });
    }
    users.push(user);
  }
  return users;
}

/** A GraphQL POST as the client at `ip` (X-Forwarded-For), with any other headers. */
export async function post(
  server: TestServer,
  query: string,
  options: { ip: string; variables?: Record<string, unknown>; headers?: Record<string, string> },
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json', 'x-forwarded-for': options.ip, ...options.headers },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/**
 * Checks a bucket's reading: at least `expected` (what is left if no time passed) and at
 * most that plus what `restoreRate` points a second can have added since `since`, and never
 * past the limit. Fails when a charge or a refund is wrong, whatever the machine's speed.
 */
export function expectAvailable(cost: Cost, expected: number, since: number): void {
  const { currentlyAvailable, maximumAvailable, restoreRate } = cost.throttleStatus;
  const regained = Math.ceil(((performance.now() - since) / 1000) * restoreRate) + 1;
  expect(currentlyAvailable, JSON.stringify(cost)).toBeGreaterThanOrEqual(Math.min(expected, maximumAvailable));
  expect(currentlyAvailable, JSON.stringify(cost)).toBeLessThanOrEqual(Math.min(maximumAvailable, expected + regained));
}

/** A raw graphql-transport-ws client: every message as the server sent it. */
export class Socket {
  readonly messages: any[] = [];
  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => this.messages.push(JSON.parse(String(data))));
  }

  /** Opens and acknowledges a socket from the client at `ip`; `token` signs it in. */
  static async open(server: TestServer, ip: string, token?: string): Promise<Socket> {
    const socket = new WebSocket(wsUrl(server), 'graphql-transport-ws', { headers: { 'x-forwarded-for': ip } });
    const raw = new Socket(socket);
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    raw.send({ type: 'connection_init', payload: token ? { authorization: `Bearer ${token}` } : {} });
    await raw.next((m) => m.type === 'connection_ack');
    return raw;
  }

  send(message: unknown): void {
    this.socket.send(JSON.stringify(message));
  }

  /** Sends a subscribe and waits for its first `next` or `error`. */
  async run(id: string, query: string, variables?: Record<string, unknown>): Promise<any> {
    this.send({ id, type: 'subscribe', payload: { query, variables } });
    return this.next((m) => m.id === id && (m.type === 'next' || m.type === 'error'));
  }

  async next(match: (message: any) => boolean, timeoutMs = 10_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching message; got ${JSON.stringify(this.messages)}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  get open(): boolean {
    return this.socket.readyState === WebSocket.OPEN;
  }

  close(): void {
    this.socket.close();
  }
}

/** Polls `check` until it is true, every 20 ms, for at most `timeoutMs`. */
export async function eventually(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
