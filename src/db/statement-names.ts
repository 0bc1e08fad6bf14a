/**
 * Names for PostgreSQL's prepared statements (docs/decisions.md, 2026-11-25): a query
 * sent with a name is parsed and planned once per connection, then only bound and run,
 * which halves PostgreSQL's work for Inkwell's small reads. Each distinct SQL text gets
 * its own name; texts are few (src/db/statements.ts compiles each read once per shape),
 * but a list's length makes a new text, so only the first `max` texts are named and any
 * later one goes unnamed, as before, rather than growing every connection's set.
 */
export const MAX_NAMED_STATEMENTS = 2_000;

export class StatementNames {
  private readonly names = new Map<string, string>();

  constructor(private readonly max = MAX_NAMED_STATEMENTS) {}

  /** The name to prepare `text` under, or undefined to send it unnamed. */
  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < this.max) {
      name = `inkwell_${this.names.size + 1}`;
      this.names.set(text, name);
    }
    return name;
  }
}

/**
 * A named statement PostgreSQL cannot run as prepared: its cached plan would change the
 * result type (a migration altered a table under a `select *`, 0A000), or the server
 * session does not have it (a pooler in transaction mode that moved us, 26000). Sent
 * again unnamed, it works.
 */
export function isPreparedStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === '26000' || (code === '0A000' && /cached plan must not change result type/.test(String((error as Error).message)));
}
