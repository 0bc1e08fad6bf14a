import { CompiledQuery, type Compilable, type Kysely } from 'kysely';

/**
 * Reads whose SQL Kysely builds and compiles once per shape instead of on every call
 * (docs/decisions.md, "a lean miss path"): the first call builds the query with marker
 * values in place of its arguments and notes where each lands among the compiled
 * parameters; later calls only put the real values there. A shape is the read's name
 * and the lengths of its list arguments (`id in (?, ?, ?)` differs by length).
 */
export type Argument = string | number | readonly string[];

type Slot = { readonly arg: number; readonly item?: number } | { readonly value: unknown };

interface Shape {
  readonly sql: string;
  readonly slots: readonly Slot[];
}

const MARK = '\u0000inkwell:';

/** The statements of one database handle (one cache per handle, shared by the services). */
export function statementsOf<DB>(db: Kysely<DB>): Statements {
  let statements = byHandle.get(db);
  if (!statements) {
    statements = new Statements(db);
    byHandle.set(db, statements);
  }
  return statements;
}

const byHandle = new WeakMap<object, Statements>();

export class Statements {
  private readonly shapes = new Map<string, Shape>();

  constructor(private readonly db: Pick<Kysely<unknown>, 'executeQuery'>) {}

  /** Runs `build(...args)`: built and compiled the first time for this shape of arguments. */
  async rows<A extends readonly Argument[], R>(name: string, build: (...args: A) => Compilable<R>, args: A): Promise<R[]> {
    let key = name;
    for (const arg of args) key += Array.isArray(arg) ? `,${arg.length}` : ',';
    let shape = this.shapes.get(key);
    if (!shape) {
      shape = compileShape(build, args);
      this.shapes.set(key, shape);
    }
    const parameters = shape.slots.map((slot) => ('value' in slot ? slot.value : valueAt(args, slot.arg, slot.item)));
    return (await this.db.executeQuery(CompiledQuery.raw(shape.sql, parameters))).rows as R[];
  }
}

function valueAt(args: readonly Argument[], arg: number, item: number | undefined): unknown {
  const value = args[arg];
  return item === undefined ? value : (value as readonly string[])[item];
}

function compileShape<A extends readonly Argument[]>(build: (...args: A) => Compilable<unknown>, args: A): Shape {
  const markers = args.map((arg, i) => (Array.isArray(arg) ? arg.map((_, k) => `${MARK}${i}.${k}`) : `${MARK}${i}`));
  const compiled = build(...(markers as unknown as A)).compile();
  const seen = new Set<string>();
  const slots = compiled.parameters.map((parameter): Slot => {
    if (typeof parameter !== 'string' || !parameter.startsWith(MARK)) return { value: parameter };
    seen.add(parameter);
    const [arg, item] = parameter.slice(MARK.length).split('.');
    return item === undefined ? { arg: Number(arg) } : { arg: Number(arg), item: Number(item) };
  });
  // Every argument must reach the SQL as a parameter: one used in the builder's logic,
  // or inlined into the text, would be frozen at its marker value.
  const expected = markers.flat().length;
  if (seen.size !== expected || compiled.sql.includes(MARK)) throw new Error('a compiled read must take each argument as a parameter');
  return { sql: compiled.sql, slots };
}
