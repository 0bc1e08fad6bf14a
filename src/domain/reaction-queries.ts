import { sql } from 'kysely';
import type { Db } from '../db/connect.js';
import type { ReactionRow } from '../db/schema.js';

/** A reaction row with its rank among its post's reactions, newest first (1 = newest). */
export type RankedReactionRow = ReactionRow & { rn: number };

/**
 * Each post's newest `end` reactions, ranked per post, in one statement: per post through
 * the `(post_id, created_at)` index, so a post with 10,000 reactions costs a page of them,
 * not a ranking of all (as `authorsNewest` in ./post-queries.ts does for posts). The ids go
 * as one JSON parameter: one statement text for any number of posts.
 */
export function postsNewestReactions(db: Db, postIds: readonly string[], end: number): Promise<RankedReactionRow[]> {
  const posts = JSON.stringify(postIds);
  const rank = sql`cast(row_number() over (partition by r.post_id order by r.created_at desc, r.id desc) as integer)`;
  const query =
    db.dialect === 'postgres'
      ? sql<RankedReactionRow>`select r.*, ${rank} as rn from json_array_elements_text(${posts}::json) as a(post_id)
          cross join lateral (select * from reactions as q where q.post_id = a.post_id
            order by q.created_at desc, q.id desc limit ${end}) as r
          order by rn`
      : sql<RankedReactionRow>`select r.*, ${rank} as rn from json_each(${posts}) as a
          join reactions as r on r.rowid in (select q.rowid from reactions as q where q.post_id = a.value
            order by q.created_at desc, q.id desc limit ${end})
          order by rn`;
  return query.execute(db.domain).then((result) => result.rows);
}
