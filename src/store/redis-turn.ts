import type { Redis } from 'ioredis';
import { started, TurnWork } from '../turn.js';

/**
 * The key-value commands of one event-loop turn, sent to Redis together at the turn's
 * check phase (docs/decisions.md, "one Redis pipeline per turn"): one write instead of
 * one per request. The reads of the turn become one MGET of their distinct keys, each
 * caller taking its own; the commands of a `Merge` (counts, cost buckets) become one
 * command per key. Other commands go in the order they were asked, before the MGET: a
 * read sent after a write of the same turn sees it, as it would have one by one. A
 * command that throws as it is sent fails its own callers, not the turn's others.
 */
export class TurnPipeline {
  private commands: Queued[] = [];
  private reads = new Map<string, number>();
  private readers: Reader[] = [];
  private merges = new Map<Merge<unknown, unknown>, Map<string, Merging[]>>();
  private readonly turn = new TurnWork(() => this.flush());

  private constructor(private readonly client: Redis) {
    defineIncrementScript(client);
  }

  /** One per connection, so stores with different key prefixes share its turns. */
  static of(client: Redis): TurnPipeline {
    let turn = turns.get(client);
    if (!turn) {
      turn = new TurnPipeline(client);
      turns.set(client, turn);
    }
    return turn;
  }

  /** The values of `keys` (null where missing), read in this turn's MGET. */
  mget(keys: readonly string[]): Promise<(string | null)[]> {
    return new Promise((resolve, reject) => {
      this.schedule();
      const at = keys.map((key) => {
        let index = this.reads.get(key);
        if (index === undefined) {
          index = this.reads.size;
          this.reads.set(key, index);
        }
        return index;
      });
      this.readers.push({ at, resolve, reject });
    });
  }

  /**
   * INCRBY and PEXPIRE in one small Lua script, atomic; merged per key and turn, each
   * caller getting its own count (`total - n + 1` to `total` for n callers), as n INCRs
   * in a row would have given. The TTL restarts with each increment.
   */
  incr(key: string, ttlMs: number): Promise<number> {
    return this.merged(INCREMENT, key, ttlMs);
  }

  /**
   * One of the calls that `merge` joins per key and turn: every `item` asked for `key`
   * in this turn goes out in one command, and each caller gets its own answer, in the
   * order they asked. For read-modify-write scripts whose n calls in a row `merge` can
   * do in one (docs/decisions.md, "Request counts and cost buckets").
   */
  merged<I, R>(merge: Merge<I, R>, key: string, item: I): Promise<R> {
    return new Promise((resolve, reject) => {
      this.schedule();
      let byKey = this.merges.get(merge as Merge<unknown, unknown>);
      if (!byKey) this.merges.set(merge as Merge<unknown, unknown>, (byKey = new Map()));
      const pending = byKey.get(key);
      const caller = { item, resolve: resolve as (value: unknown) => void, reject };
      if (pending) pending.push(caller);
      else byKey.set(key, [caller]);
    });
  }

  /** Any other command: `add` sends exactly one and returns its reply. */
  command<T>(add: (client: Redis) => Promise<T>): Promise<T> {
    return new Promise((resolve, reject) => {
      this.schedule();
      this.commands.push({ add, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  private schedule(): void {
    this.turn.ask();
  }

  private flush(): void {
    const { client, commands, reads, readers, merges } = this;
    this.commands = [];
    this.reads = new Map();
    this.readers = [];
    this.merges = new Map();

    // One write: the commands go straight to the connection while its socket is corked
    // (docs/decisions.md, "Nothing per request lives until a full collection").
    const stream = client.stream;
    stream?.cork();
    try {
      for (const caller of commands) started(() => caller.add(client)).then(caller.resolve, caller.reject);
      if (readers.length > 0) {
        started(() => client.mget([...reads.keys()])).then(
          (values) => readers.forEach((reader) => reader.resolve(reader.at.map((index) => values[index] ?? null))),
          (error: unknown) => readers.forEach((reader) => reader.reject(error)),
        );
      }
      for (const [merge, byKey] of merges) {
        for (const [key, callers] of byKey) {
          const items = callers.map((c) => c.item);
          started(() => merge.add(client, key, items)).then(
            (reply) => {
              const answers = merge.split(reply, items);
              callers.forEach((caller, k) => caller.resolve(answers[k]));
            },
            (error: unknown) => callers.forEach((caller) => caller.reject(error)),
          );
        }
      }
    } finally {
      stream?.uncork();
    }
  }
}

const turns = new WeakMap<Redis, TurnPipeline>();

interface Settle<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}
interface Queued extends Settle<unknown> {
  readonly add: (client: Redis) => Promise<unknown>;
}
interface Reader extends Settle<(string | null)[]> {
  readonly at: readonly number[];
}
interface Merging extends Settle<unknown> {
  readonly item: unknown;
}

/**
 * How the calls of one key and turn become one command: `add` sends exactly one command
 * for all `items` and returns its reply; `split` divides that reply, one answer per item, in
 * order. Calls merge when they name the same object: keep one per kind of call (a
 * constant, or a field of the instance that makes the calls), never one per call.
 */
export interface Merge<I, R> {
  add(client: Redis, key: string, items: readonly I[]): Promise<unknown>;
  split(reply: unknown, items: readonly I[]): R[];
}

const INCR_WITH_TTL = `local n = redis.call('INCRBY', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`;

type Scripted = Redis & { inkwellIncrBy(key: string, ttlMs: number, by: number): Promise<number> };

/** n increments of a key: one INCRBY n with the last caller's TTL. */
const INCREMENT: Merge<number, number> = {
  add: (client, key, ttls) => (client as Scripted).inkwellIncrBy(key, ttls[ttls.length - 1]!, ttls.length),
  split: (total, ttls) => ttls.map((_, k) => Number(total) - ttls.length + 1 + k),
};

/**
 * Defines the script as a command (EVALSHA; ioredis loads it on first use and after a
 * Redis restart). It must be defined before the connection's first command: an
 * auto-pipeline copies the commands defined when it opens, and calling one it lacks
 * throws an uncaught TypeError inside ioredis (docs/decisions.md, 2026-11-25).
 */
function defineIncrementScript(client: Redis): void {
  if (!('inkwellIncrBy' in client)) client.defineCommand('inkwellIncrBy', { numberOfKeys: 1, lua: INCR_WITH_TTL });
}
