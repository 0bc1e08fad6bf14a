import { GraphQLError, createSourceEventStream, type ExecutionResult, type GraphQLSchema } from 'graphql';
import type { Caller } from '../../domain/caller.js';
import type { Services } from '../../domain/services.js';
import { createContext } from '../context.js';
import { formatError, type FormatOptions } from '../operation/errors.js';
import type { PreparedOperation } from '../operation/pipeline.js';

/**
 * Subscription fan-out: each event is executed once per *group* — subscribers with the
 * same prepared operation, the same variables and the same visibility class (the
 * caller's identity) — and the payload, serialised once, is written to
 * every socket of the group. One execution per event instead of one per subscriber,
 * and a group never mixes callers who could see different data
 * (docs/design-notes.md#subscription-fan-out).
 */

/** Who receives: the transport's connection and the graphql-transport-ws subscription id (none over SSE). */
export interface Subscriber<C> {
  readonly connection: C;
  readonly id: string;
  /** The subscription's `extensions.cost` as JSON (what it was charged when it started), added to each of its events. */
  readonly cost?: string;
}

export interface SubscriptionRequest<C> {
  readonly prepared: PreparedOperation;
  /** The raw variables of the message (already checked against their types). */
  readonly variables: Record<string, unknown> | undefined;
  /** A stable text of the coerced variables. */
  readonly variablesKey: string;
  readonly caller: Caller;
  readonly subscriber: Subscriber<C>;
}

export interface FanoutOptions<C> {
  schema: GraphQLSchema;
  services: Services;
  format: FormatOptions;
  /** Writes one complete `next` message (text) to a connection. */
  write(connection: C, message: string): void;
  /**
   * The message around an event's payload, for a transport whose message names no
   * subscriber (SSE, one operation per stream): made once per event for the whole group.
   * Without it, each subscriber's graphql-transport-ws `next` carries its id.
   */
  frame?(payload: string): string;
}

/** Callers who may see different data never share a group; equal callers always may. */
export function visibilityClass(caller: Caller): string {
  return caller.kind === 'user' ? `${caller.role}:${caller.id}` : 'anonymous';
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

export class FanoutHub<C> {
  private readonly groups = new Map<string, Group<C>>();
  private readonly inflight = new Set<Promise<void>>();

  constructor(readonly options: FanoutOptions<C>) {}

  /**
   * The subscriber's iterator for graphql-ws: it yields nothing itself (the group
   * writes the messages) and completes when the group's stream ends; or the result
   * with errors when the stream could not start (bad arguments, a resolver error).
   */
  async subscribe(request: SubscriptionRequest<C>): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
    const key = `${request.prepared.key}\u0001${request.variablesKey}\u0001${visibilityClass(request.caller)}`;
    for (;;) {
      let group = this.groups.get(key);
      if (!group) {
        group = new Group(this, key, request);
        this.groups.set(key, group);
      }
      const failed = await group.ready;
      if (failed) return failed;
      // The group may have ended while this subscriber waited; then start another.
      if (!group.ended) return group.join(request.subscriber);
    }
  }

  /** Groups and subscribers now (for tests and the bench). */
  stats(): { groups: number; subscribers: number } {
    let subscribers = 0;
    for (const group of this.groups.values()) subscribers += group.size;
    return { groups: this.groups.size, subscribers };
  }

  /** Waits for events being executed and written right now (graceful shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inflight]);
  }

  /** Ends every group: their subscribers complete and their listeners are released. */
  close(): void {
    for (const group of [...this.groups.values()]) group.finish(undefined);
  }

  /** @internal */
  forget(group: Group<C>): void {
    if (this.groups.get(group.key) === group) this.groups.delete(group.key);
  }

  /** @internal One execution and one serialisation, then the same payload to every active member. */
  deliver(group: Group<C>, event: unknown): Promise<void> {
    const delivery = this.render(group, event).then((body) => {
      const shared = this.options.frame?.(body);
      // The payload without its closing brace, once: a subscriber with a cost gets its own `extensions` after it.
      const open = body.slice(0, body.lastIndexOf('}'));
      for (const member of group.members) {
        if (!member.active) continue;
        const cost = member.subscriber.cost;
        const message = cost === undefined ? (shared ?? member.frame(body)) : this.framed(member, `${open},"extensions":{"cost":${cost}}}`);
        this.options.write(member.subscriber.connection, message);
      }
    });
    this.inflight.add(delivery);
    return delivery.finally(() => this.inflight.delete(delivery));
  }

  private framed(member: Member<C>, payload: string): string {
    return this.options.frame ? this.options.frame(payload) : member.frame(payload);
  }

  private async render(group: Group<C>, event: unknown): Promise<string> {
    const { prepared } = group;
    let result: ExecutionResult;
    try {
      const context = createContext(this.options.services, group.caller);
      result = (await prepared.executable.query(event, context, group.variables)) as ExecutionResult;
    } catch (error) {
      result = { data: null, errors: [internalError(error)] };
    }
    return result.errors?.length
      ? JSON.stringify({ data: result.data, errors: result.errors.map((e) => formatError(e, this.options.format)) })
      : JSON.stringify(result);
  }
}

class Group<C> {
  readonly members = new Set<Member<C>>();
  readonly ready: Promise<ExecutionResult | undefined>;
  readonly prepared: PreparedOperation;
  readonly variables: Record<string, unknown> | undefined;
  readonly caller: Caller;
  ended = false;
  private iterator: AsyncIterator<unknown> | undefined;

  constructor(
    private readonly hub: FanoutHub<C>,
    readonly key: string,
    request: SubscriptionRequest<C>,
  ) {
    this.prepared = request.prepared;
    this.variables = request.variables;
    this.caller = request.caller;
    this.ready = this.open();
  }

  /** Members that receive events now. */
  get size(): number {
    let active = 0;
    for (const member of this.members) if (member.active) active++;
    return active;
  }

  join(subscriber: Subscriber<C>): AsyncIterableIterator<ExecutionResult> {
    const member = new Member(this, subscriber);
    this.members.add(member);
    return member;
  }

  /** A member left (complete, or its socket closed); the last one releases the source. */
  leave(member: Member<C>): void {
    this.members.delete(member);
    if (this.members.size === 0) this.finish(undefined);
  }

  /** The stream ended or failed, or nobody listens any more. */
  finish(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.hub.forget(this);
    for (const member of this.members) member.end(error);
    this.members.clear();
    void Promise.resolve(this.iterator?.return?.()).catch(() => {});
  }

  private async open(): Promise<ExecutionResult | undefined> {
    let stream: AsyncIterable<unknown> | ExecutionResult;
    try {
      stream = await createSourceEventStream({
        schema: this.hub.options.schema,
        document: this.prepared.document,
        operationName: this.prepared.operationName,
        variableValues: this.variables,
        contextValue: createContext(this.hub.options.services, this.caller),
        rootValue: undefined,
      });
    } catch (error) {
      stream = { errors: [internalError(error)] };
    }
    if (!(Symbol.asyncIterator in stream)) {
      this.ended = true;
      this.hub.forget(this);
      return stream;
    }
    this.iterator = stream[Symbol.asyncIterator]();
    void this.run(this.iterator);
    return undefined;
  }

  private async run(iterator: AsyncIterator<unknown>): Promise<void> {
    try {
      for (;;) {
        const next = await iterator.next();
        if (next.done || this.ended) break;
        await this.hub.deliver(this, next.value);
      }
      this.finish(undefined);
    } catch (error) {
      this.finish(error);
    }
  }
}

/** One subscriber: the iterator graphql-ws reads (it only ever completes or fails) and the frame writer. */
class Member<C> implements AsyncIterableIterator<ExecutionResult> {
  /** Receives events once graphql-ws has registered the subscription and started reading. */
  active = false;
  private finished = false;
  /** The stream's error, for a read that comes after the group failed. */
  private failure: unknown;
  private resolvePending: ((result: IteratorResult<ExecutionResult>) => void) | undefined;
  private rejectPending: ((error: unknown) => void) | undefined;
  private idJson: string | undefined;

  constructor(
    private readonly group: Group<C>,
    readonly subscriber: Subscriber<C>,
  ) {}

  /**
   * The `next` message for this subscriber around the group's payload, serialised once:
   * graphql-ws's own `stringifyMessage` would serialise the payload again per subscriber
   * (docs/design-notes.md#subscription-fan-out); ws frames and encodes the text.
   */
  frame(payload: string): string {
    this.idJson ??= JSON.stringify(this.subscriber.id);
    return `{"id":${this.idJson},"type":"next","payload":${payload}}`;
  }

  /** Ended by the group: a pending read completes, or fails with the stream's error. */
  end(error: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.active = false;
    const [resolve, reject] = [this.resolvePending, this.rejectPending];
    this.resolvePending = this.rejectPending = undefined;
    if (!resolve || !reject) this.failure = error;
    else if (error === undefined) resolve(DONE);
    else reject(error);
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.finished) {
      const failure = this.failure;
      this.failure = undefined;
      return failure === undefined ? Promise.resolve(DONE) : Promise.reject(failure);
    }
    this.active = true;
    return new Promise((resolve, reject) => {
      this.resolvePending = resolve;
      this.rejectPending = reject;
    });
  }

  /** graphql-ws calls it on `complete` and when the socket closes. */
  return(): Promise<IteratorResult<ExecutionResult>> {
    if (!this.finished) {
      this.end(undefined);
      this.group.leave(this);
    }
    return Promise.resolve(DONE);
  }

  async throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.return();
    throw error;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}

/** formatError masks it as INTERNAL_ERROR and hands the original to the log. */
function internalError(error: unknown): GraphQLError {
  const original = error instanceof Error ? error : new Error(String(error));
  return new GraphQLError(original.message, { originalError: original });
}
