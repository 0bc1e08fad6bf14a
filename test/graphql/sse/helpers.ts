import { createClient, type Client, type ClientOptions, type ExecutionResult, type RequestParams } from 'graphql-sse';
import type { Post, User } from '../../../src/domain/types.js';
import type { TestServer } from '../../helpers/server.js';

/** The GraphQL endpoint: GraphQL over SSE is served at the same path as HTTP and WebSocket. */
export const endpoint = (server: Pick<TestServer, 'url'>): string => `${server.url}/graphql`;

/**
 * graphql-sse's own client in its distinct connections mode (its default: one POST of
 * JSON with `Accept: text/event-stream` per operation), failing at once instead of
 * retrying, so a refusal reaches the test as the error it is.
 */
export function sseClient(server: Pick<TestServer, 'url'>, options: Partial<ClientOptions<false>> = {}): Client<false> {
  return createClient({ url: endpoint(server), retryAttempts: 0, ...options, singleConnection: false });
}

/** Polls until `check` is true (or fails after `timeoutMs`, generous: nothing here measures time). */
export async function waitFor(check: () => boolean, timeoutMs = 15_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Polls an asynchronous check until it holds (or fails after `timeoutMs`). */
export async function eventually(check: () => Promise<boolean>, what = 'condition', timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export interface Collected<T> {
  results: ExecutionResult<T, unknown>[];
  error: unknown;
  completed: boolean;
  /** Resolves when the response's headers arrived: the server sends them once the subscription is live. */
  connected: Promise<void>;
  /** Resolves once the sink completed or failed. */
  done: Promise<void>;
  stop(): void;
}

/** One operation through the client, everything its sink hears recorded. */
export function collect<T = any>(client: Client<false>, request: RequestParams): Collected<T> {
  let connected!: () => void;
  let done!: () => void;
  const collected: Collected<T> = {
    results: [],
    error: undefined,
    completed: false,
    connected: new Promise<void>((resolve) => (connected = resolve)),
    done: new Promise<void>((resolve) => (done = resolve)),
    stop: () => {},
  };
  collected.stop = client.subscribe<T>(
    request,
    {
      next: (result) => collected.results.push(result),
      error: (error) => {
        collected.error = error;
        done();
      },
      complete: () => {
        collected.completed = true;
        done();
      },
    },
    { connected: () => connected() },
  );
  // A refusal fails the sink before any connection: `connected` then never comes.
  void collected.done.then(() => connected());
  return collected;
}

/** One query or mutation: its results, then its end (completed, or the client's error). */
export async function once<T = any>(client: Client<false>, request: RequestParams): Promise<Collected<T>> {
  const collected = collect<T>(client, request);
  await collected.done;
  return collected;
}

/** The HTTP status of a client's failure (graphql-sse's NetworkError keeps the response). */
export function statusOf(error: unknown): number | undefined {
  return (error as { response?: Response } | undefined)?.response?.status;
}

/** The response of a client's failure, read: its status, headers and JSON body. */
export async function refusalOf(error: unknown): Promise<{ status: number; headers: Headers; body: any }> {
  const response = (error as { response?: Response } | undefined)?.response;
  if (!response) throw new Error(`not a refused response: ${String(error)}`);
  return { status: response.status, headers: response.headers, body: await response.json() };
}

/** A raw request that asks for an event stream: its status, headers and whole body (a stream that ends). */
export async function rawEventStream(
  server: Pick<TestServer, 'url'>,
  init: { method?: string; query?: string; body?: unknown; headers?: Record<string, string> },
): Promise<{ status: number; headers: Headers; text: string }> {
  const url = init.query === undefined ? endpoint(server) : `${endpoint(server)}?${init.query}`;
  const response = await fetch(url, {
    method: init.method ?? 'POST',
    headers: { accept: 'text/event-stream', ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** The events of an event-stream body, as graphql-sse frames them (`event:` and `data:` lines). */
export function eventsOf(text: string): { event: string; data: any }[] {
  return text
    .split('\n\n')
    .filter((block) => block.startsWith('event:'))
    .map((block) => {
      const [eventLine, dataLine = 'data:'] = block.split('\n');
      const data = dataLine.slice('data:'.length).trim();
      return { event: eventLine!.slice('event:'.length).trim(), data: data === '' ? null : JSON.parse(data) };
    });
}

let counter = 0;

export { account, type Account } from '../../helpers/auth.js';

/** A post by `author` (an editor or admin), through the services. */
export function post(server: TestServer, author: User, fields: { published?: boolean; content?: string } = {}): Promise<Post> {
  const system = { kind: 'user' as const, id: 'fixture-admin', role: 'admin' as const, sessionId: null };
  return server.inkwell.services.posts.create(system, {
    title: `SSE post ${++counter}`,
    authorId: author.id,
    published: fields.published ?? true,
    content: fields.content ?? null,
  });
}
