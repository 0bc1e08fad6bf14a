import { createClient, type Client, type FormattedExecutionResult, type SubscribePayload } from 'graphql-ws';
import WebSocket from 'ws';
import type { Caller, Role } from '../../../src/domain/caller.js';
import type { Post, User } from '../../../src/domain/types.js';
import type { GraphqlWsServer } from '../../../src/graphql/ws/server.js';
import { callerOf } from '../../domain/helpers.js';
import type { TestServer } from '../../helpers/server.js';

export const PROTOCOL = 'graphql-transport-ws';

/** Polls until `check` is true (or fails after `timeoutMs`). */
export async function waitFor(check: () => boolean, timeoutMs = 5_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let counter = 0;

/** Creates data through the services (the account area's tokens are not needed for that). */
export function fixtures(server: TestServer) {
  const { services } = server.inkwell;
  const system: Caller = { kind: 'user', id: 'fixture-admin', role: 'admin', sessionId: null };
  return {
    user: (role: Role = 'user', name = `${role} ${++counter}`): Promise<User> =>
      services.users.insertAccount({ name, email: `${role}${++counter}@example.test`, role }),
    post: (author: User, fields: { published?: boolean; content?: string } = {}): Promise<Post> =>
      services.posts.create(system, {
        title: `Post ${++counter}`,
        authorId: author.id,
        published: fields.published ?? true,
        content: fields.content ?? null,
      }),
    publish: (post: Post) => services.posts.publish(system, post.id),
    react: (user: User, post: Post, type = 'like') => services.reactions.add(callerOf(user), post.id, type),
  };
}

export { account, type Account } from '../../helpers/auth.js';

/** A graphql-ws client over `ws`, failing fast instead of retrying. */
export function wsClient(url: string, connectionParams?: Record<string, unknown>, headers?: Record<string, string>): Client {
  return createClient({
    url,
    webSocketImpl: headers
      ? class extends WebSocket {
          constructor(address: string, protocols?: string | string[]) {
            super(address, protocols, { headers });
          }
        }
      : WebSocket,
    connectionParams,
    retryAttempts: 0,
    lazy: true,
  });
}

export interface Collected<T> {
  results: FormattedExecutionResult<T, unknown>[];
  errors: unknown[];
  completed: boolean;
  stop(): void;
}

/** Subscribes and records everything the sink hears. */
export function collect<T = any>(client: Client, payload: SubscribePayload): Collected<T> {
  const collected: Collected<T> = { results: [], errors: [], completed: false, stop: () => {} };
  collected.stop = client.subscribe<T>(payload, {
    next: (result) => collected.results.push(result),
    error: (error) => collected.errors.push(error),
    complete: () => (collected.completed = true),
  });
  return collected;
}

/** Waits until the server has `count` live subscribers (events published now reach them). */
export async function subscribersReady(realtime: GraphqlWsServer, count: number): Promise<void> {
  await waitFor(() => realtime.stats().subscribers === count, 5_000, `${count} subscribers`);
}

/** A raw protocol client, to see exactly what the server sends and how it closes. */
export class RawSocket {
  readonly messages: any[] = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: (() => void)[] = [];

  private constructor(readonly socket: WebSocket) {
    socket.on('message', (data) => {
      this.messages.push(JSON.parse(String(data)));
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.closed = new Promise((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
  }

  static open(url: string, protocols: string | string[] | undefined = PROTOCOL, options: WebSocket.ClientOptions = {}): Promise<RawSocket> {
    const socket = new WebSocket(url, protocols, options);
    const raw = new RawSocket(socket);
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(raw));
      socket.once('error', reject);
    });
  }

  send(message: unknown): void {
    this.socket.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  async init(payload?: Record<string, unknown>): Promise<void> {
    this.send({ type: 'connection_init', payload });
    await this.next((m) => m.type === 'connection_ack');
  }

  subscribe(id: string, query: string, variables?: Record<string, unknown>): void {
    this.send({ id, type: 'subscribe', payload: { query, variables } });
  }

  /** The first message (already received or coming) that matches. */
  async next(match: (message: any) => boolean = () => true, timeoutMs = 5_000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no matching message; got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  }

  close(): void {
    this.socket.close();
  }
}
