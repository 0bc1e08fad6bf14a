/**
 * Table types for Kysely. Column types are the same on SQLite and PostgreSQL on
 * purpose: times are ISO 8601 text, booleans are 0/1 integers, tag lists are JSON
 * text. That keeps one set of migrations and no dialect branches in queries.
 */
import type { Insertable, Selectable, Updateable } from 'kysely';

export interface UsersTable {
  id: string;
  name: string;
  /** Lower-cased; null only for accounts from a provider that gave no email. */
  email: string | null;
  age: number | null;
  avatar: string | null;
  role: string;
  password_hash: string | null;
  created_at: string;
}

export interface PostsTable {
  id: string;
  author_id: string;
  title: string;
  content: string | null;
  published: number;
  /** JSON array of strings, or null. */
  tags: string | null;
  created_at: string;
  updated_at: string;
}

export interface ReactionsTable {
  id: string;
  post_id: string;
  user_id: string;
  type: string;
  created_at: string;
}

export interface BooksTable {
  id: string;
  title: string;
  author: string;
  year: number | null;
  created_at: string;
}

/** A sign-in: the family of refresh tokens that descend from one login. */
export interface SessionsTable {
  id: string;
  user_id: string;
  created_at: string;
  /** Absolute end of the session (30 days after sign-in); refreshes never extend it. */
  expires_at: string;
  revoked_at: string | null;
}

export interface RefreshTokensTable {
  /** SHA-256 of the token; the token itself is never stored. */
  token_hash: string;
  session_id: string;
  created_at: string;
  expires_at: string;
  /** Set when the token was exchanged for a new one. */
  rotated_at: string | null;
}

export interface OAuthAccountsTable {
  provider: string;
  provider_account_id: string;
  user_id: string;
  created_at: string;
}

export interface Database {
  users: UsersTable;
  posts: PostsTable;
  reactions: ReactionsTable;
  books: BooksTable;
  sessions: SessionsTable;
  refresh_tokens: RefreshTokensTable;
  oauth_accounts: OAuthAccountsTable;
}

export type UserRow = Selectable<UsersTable>;
export type PostRow = Selectable<PostsTable>;
export type ReactionRow = Selectable<ReactionsTable>;
export type BookRow = Selectable<BooksTable>;
export type SessionRow = Selectable<SessionsTable>;
export type NewUser = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
