/**
 * Names for PostgreSQL's prepared statements (docs/decisions.md, 2026-11-25): a query
 * sent with a name is parsed and planned once per connection, then only bound and run,
 * which halves PostgreSQL's work for Inkwell's small reads. Each distinct SQL text gets
 * its own name. A prepared statement stays in its connection's memory (measured ~25 KB
 * each for lists of up to 32 ids, ~56 KB on average up to 200), and a list's length
 * makes a new text, so only statements of up to 32 parameters are named, and only the
 * first 500 texts: at most ~12 MB per connection. The rest go unnamed, as before.
 */
export const MAX_NAMED_STATEMENTS = 500;
export const MAX_NAMED_PARAMETERS = 32;

export class StatementNames {
  private readonly names = new Map<string, string>();

  constructor(private readonly max = MAX_NAMED_STATEMENTS) {}

  /** The name to prepare `text` under, or undefined to send it unnamed. */
  nameOf(text: string, parameters: number): string | undefined {
    if (parameters > MAX_NAMED_PARAMETERS) return undefined;
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
