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

export interface Post {
  id: string;
  authorId: string;
  title: string;
  content: string | null;
  published: boolean;
  tags: string[] | null;
  createdAt: string;
}

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
