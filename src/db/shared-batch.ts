import { started, TurnWork } from '../turn.js';

/**
 * Lookups by key from concurrent requests, merged into one statement (docs/decisions.md,
 * 2026-11-25). Each request's DataLoader already batches its own lookups; under load,
 * several requests ask for rows by id in the same event-loop iteration (the post
 * authors of one page and of another), and each would be a round trip to the database.
 * Keys asked for until the loop's next check phase go out together; every caller gets
 * the rows of that statement and picks its own. Only for reads that are the same for
 * every caller (visibility is decided above, per request), so sharing leaks nothing.
 * A caller's dependency versions were taken before it asked, so before the statement
 * runs (the race rule of src/cache/reads.ts holds).
 */
export class SharedBatch<Row, Group extends string | number = ''> {
  /** Per group (a window's size, say: one statement takes one), the keys asked and who waits. */
  private pending = new Map<Group, Batch<Row>>();
  private readonly turn = new TurnWork(() => this.flushAll());

  constructor(
    private readonly fetch: (keys: readonly string[], group: Group) => Promise<readonly Row[]>,
    /** At most this many keys in one statement; more are fetched by the next. */
    private readonly maxKeys = 100,
  ) {}

  /** The rows for `keys` (and perhaps for other callers' keys: pick yours by key). */
  rows(keys: readonly string[], group: Group = '' as Group): Promise<readonly Row[]> {
    let batch = this.pending.get(group);
    if (batch && batch.keys.size + keys.length > this.maxKeys) {
      this.flush(group, batch);
      batch = undefined;
    }
    if (!batch) {
      this.turn.ask();
      batch = { keys: new Set(), waiting: [] };
      this.pending.set(group, batch);
    }
    for (const key of keys) batch.keys.add(key);
    const waiting = batch.waiting;
    return new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  }

  private flushAll(): void {
    // A new map each turn: deleting from a long-lived one reallocates its table in old space.
    const pending = this.pending;
    this.pending = new Map();
    for (const [group, batch] of pending) this.send(group, batch);
  }

  /** One group now, before the turn ends: its batch is full. */
  private flush(group: Group, batch: Batch<Row>): void {
    this.pending.delete(group);
    this.send(group, batch);
  }

  private send(group: Group, { keys, waiting }: Batch<Row>): void {
    started(() => this.fetch([...keys], group)).then(
      (rows) => waiting.forEach((w) => w.resolve(rows)),
      (error: unknown) => waiting.forEach((w) => w.reject(error)),
    );
  }
}

interface Batch<Row> {
  keys: Set<string>;
  waiting: Waiter<Row>[];
}

interface Waiter<Row> {
  resolve(rows: readonly Row[]): void;
  reject(error: unknown): void;
}

/**
 * The same read with the same arguments from concurrent requests, sent once per
 * event-loop turn (the front page, asked by many anonymous requests at once). As with
 * `SharedBatch`, callers join only until the statement is sent, at the loop's next check
 * phase, so its data is never older than the versions a caller took before asking.
 */
export class SharedRead<A extends readonly (string | number)[], R> {
  private waiting = new Map<string, { args: A; resolve(value: R): void; reject(error: unknown): void }[]>();
  private readonly turn = new TurnWork(() => this.flush());

  constructor(private readonly fetch: (...args: A) => Promise<R>) {}

  read(...args: A): Promise<R> {
    return new Promise((resolve, reject) => {
      this.turn.ask();
      const key = args.join('\u0000');
      const same = this.waiting.get(key);
      if (same) same.push({ args, resolve, reject });
      else this.waiting.set(key, [{ args, resolve, reject }]);
    });
  }

  private flush(): void {
    const waiting = this.waiting;
    this.waiting = new Map();
    for (const callers of waiting.values()) {
      started(() => this.fetch(...callers[0]!.args)).then(
        (value) => callers.forEach((c) => c.resolve(value)),
        (error: unknown) => callers.forEach((c) => c.reject(error)),
      );
    }
  }
}
