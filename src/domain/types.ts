import type { Role } from './caller.js';

/**
 * The records services hand out. Field names match the GraphQL types, so most
 * fields resolve by plain property access (which graphql-jit inlines).
 * No record carries a password hash.
 */
export interface User {
  id: string;
  name: string;
  email: string | null;
  age: number | null;
  avatar: string | null;
  role: Role;
  createdAt: string;
}

/**
 * A post as a list reads it when the client asked for neither its content nor its tags
 * (docs/decisions.md, "Lists read what the query asks"): a page of posts then reads no
 * content at all.
 */
export interface PostListing {
  id: string;
  authorId: string;
  title: string;
  published: boolean;
  createdAt: string;
}

export interface Post extends PostListing {
  content: string | null;
  tags: string[] | null;
}

/** What a list of posts reads: every column, or the listing's. */
export type PostColumns = 'all' | 'listing';

/** The reaction type a post's `likes` counts. */
export const LIKE = 'like';

export interface Reaction {
  id: string;
  postId: string;
  userId: string;
  type: string;
  createdAt: string;
}

export interface Book {
  id: string;
  title: string;
  author: string;
  year: number | null;
}

export interface Page {
  limit: number;
  offset: number;
}
