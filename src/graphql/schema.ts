import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import type { Resolvers } from './generated/resolvers.js';
import { Mutation } from './resolvers/mutation.js';
import { Query } from './resolvers/query.js';
import { Post, Reaction, User } from './resolvers/types.js';

/** The SDL file beside this module is the single source of the schema. */
export const typeDefs = readFileSync(new URL('./schema.graphql', import.meta.url), 'utf8');

export function buildSchema(extra: Pick<Resolvers, 'Subscription'> = {}): GraphQLSchema {
  const resolvers: Resolvers = { Query, Mutation, User, Post, Reaction, ...extra };
  return makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
}
