import type { Kysely } from 'kysely';

// Migrations are frozen once released: add a new file instead of editing this one.
// They take `Kysely<any>` because they must not depend on today's table types.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(100)', (c) => c.notNull())
    .addColumn('email', 'varchar(254)', (c) => c.unique())
    .addColumn('age', 'integer')
    .addColumn('avatar', 'varchar(2048)')
    .addColumn('role', 'varchar(16)', (c) => c.notNull())
    .addColumn('password_hash', 'varchar(100)')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('users_created_at').on('users').columns(['created_at', 'id']).execute();
  await db.schema.createIndex('users_role_created_at').on('users').columns(['role', 'created_at']).execute();

  await db.schema
    .createTable('posts')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('author_id', 'varchar(64)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('title', 'varchar(200)', (c) => c.notNull())
    .addColumn('content', 'text')
    .addColumn('published', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('tags', 'text')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('updated_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('posts_author_created_at').on('posts').columns(['author_id', 'created_at']).execute();
  await db.schema.createIndex('posts_created_at').on('posts').columns(['created_at', 'id']).execute();

  await db.schema
    .createTable('reactions')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('post_id', 'varchar(64)', (c) => c.notNull().references('posts.id').onDelete('cascade'))
    .addColumn('user_id', 'varchar(64)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('type', 'varchar(32)', (c) => c.notNull())
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addUniqueConstraint('reactions_one_per_type', ['post_id', 'user_id', 'type'])
    .execute();
  await db.schema.createIndex('reactions_post_created_at').on('reactions').columns(['post_id', 'created_at']).execute();
  await db.schema.createIndex('reactions_user').on('reactions').column('user_id').execute();

  await db.schema
    .createTable('books')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('title', 'varchar(200)', (c) => c.notNull())
    .addColumn('author', 'varchar(100)', (c) => c.notNull())
    .addColumn('year', 'integer')
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('books_created_at').on('books').columns(['created_at', 'id']).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(64)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('revoked_at', 'varchar(32)')
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();

  await db.schema
    .createTable('refresh_tokens')
    .addColumn('token_hash', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('session_id', 'varchar(64)', (c) => c.notNull().references('sessions.id').onDelete('cascade'))
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
    .addColumn('rotated_at', 'varchar(32)')
    .execute();
  await db.schema.createIndex('refresh_tokens_session').on('refresh_tokens').column('session_id').execute();

  await db.schema
    .createTable('oauth_accounts')
    .addColumn('provider', 'varchar(64)', (c) => c.notNull())
    .addColumn('provider_account_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(64)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
    .addPrimaryKeyConstraint('oauth_accounts_pk', ['provider', 'provider_account_id'])
    .execute();
  await db.schema.createIndex('oauth_accounts_user').on('oauth_accounts').column('user_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['oauth_accounts', 'refresh_tokens', 'sessions', 'books', 'reactions', 'posts', 'users']) {
    await db.schema.dropTable(table).execute();
  }
}
