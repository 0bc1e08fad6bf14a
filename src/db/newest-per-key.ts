import { sql, type RawBuilder } from 'kysely';
import type { Db } from './connect.js';

/**
 * For each key, the newest `n` rows of `table` whose `column` is that key (by
 * `created_at`, ties by `id`), grouped by key in the order given, newest first, in one
 * statement; callers slice their page's offset off each key's rows. Each key's rows are
 * read through the table's `(column, created_at, id)` index and stop at `n`, however
 * many the key has; a window over all of a key's rows read every one
 * (docs/decisions.md, 2026-11-26). The keys go as one JSON parameter, so any number of
 * them is one statement text. `filter` narrows the rows, written on the alias `q`;
 * `columns` (default: all) are the ones read.
 */
export function newestPerKey<Row>(
  db: Db,
  table: 'posts' | 'reactions',
  column: string,
  keys: readonly string[],
  n: number,
  filter?: RawBuilder<unknown>,
  columns?: readonly string[],
): Promise<Row[]> {
  const list = JSON.stringify(keys);
  const from = sql.table(table);
  const key = sql.ref(`q.${column}`);
  const where = filter ? sql` and ${filter}` : sql``;
  const select = columns ? sql.join(columns.map((name) => sql.ref(`r.${name}`))) : sql`r.*`;
  const query =
    db.dialect === 'postgres'
      ? sql<Row>`select ${select} from json_array_elements_text(${list}::json) with ordinality as a(key, k)
          cross join lateral (select * from ${from} as q where ${key} = a.key${where}
            order by q.created_at desc, q.id desc limit ${n}) as r
          order by a.k, r.created_at desc, r.id desc`
      : sql<Row>`select ${select} from json_each(${list}) as a
          join ${from} as r on r.rowid in (select q.rowid from ${from} as q where ${key} = a.value${where}
            order by q.created_at desc, q.id desc limit ${n})
          order by a.key, r.created_at desc, r.id desc`;
  return query.execute(db.domain).then((result) => result.rows);
}
