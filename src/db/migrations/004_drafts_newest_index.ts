import { sql, type Kysely } from 'kysely';

// Migrations are frozen once released: add a new file instead of editing this one.

/**
 * Authors of drafts newer than a front page's last published post (src/domain/post-queries.ts
 * `draftAuthors`). Without it SQLite answered `distinct author_id` by scanning every post
 * through the author index, in order, and looking each row up: 2.0 ms at 15,000 posts and
 * growing with the table; through the drafts alone, from the page's end, 45 µs
 * (docs/decisions.md, "Draft authors through a drafts index").
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('posts_drafts_newest').on('posts').columns(['created_at', 'id']).where(sql<boolean>`published = 0`).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('posts_drafts_newest').execute();
}
