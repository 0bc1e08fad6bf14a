/**
 * Lookups by key from concurrent requests, merged into one statement (docs/decisions.md,
 * 2026-11-25). Each request's DataLoader already batches its own lookups; under load,
 * several requests ask for rows by id in the same event-loop iteration (the post
 * authors of one page and of another), and each would be a round trip to the database.
 * Keys asked for until the loop's next check phase go out together; every caller gets
 * the rows of that statement and picks its own. Only for reads that are the same for
 * every caller (visibility is decided above, per request), so sharing leaks nothing.
 * A caller's dependency versions were taken before it asked, so before the statement
 * runs (the race rule of src/domain/reads.ts holds).
 */
export class SharedBatch<Row> {
  private waiting: { resolve(rows: readonly Row[]): void; reject(error: unknown): void }[] = [];
  private keys = new Set<string>();

  constructor(
    private readonly fetch: (keys: readonly string[]) => Promise<readonly Row[]>,
    /** At most this many keys in one statement; more are fetched by the next. */
    private readonly maxKeys = 100,
  ) {}

  /** The rows for `keys` (and perhaps for other callers' keys: pick yours by key). */
  rows(keys: readonly string[]): Promise<readonly Row[]> {
    if (this.keys.size + keys.length > this.maxKeys && this.keys.size > 0) this.flush();
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => this.flush());
      for (const key of keys) this.keys.add(key);
      this.waiting.push({ resolve, reject });
    });
  }

  private flush(): void {
    if (this.waiting.length === 0) return;
    const waiting = this.waiting;
    const keys = [...this.keys];
    this.waiting = [];
    this.keys = new Set();
    this.fetch(keys).then(
      (rows) => waiting.forEach((w) => w.resolve(rows)),
      (error: unknown) => waiting.forEach((w) => w.reject(error)),
    );
  }
}
