import { signedInId } from '../../domain/caller.js';
import { checkId, page } from '../../domain/validate.js';
import type { QueryResolvers } from '../generated/resolvers.js';
import { postColumns } from './selection.js';

// Thin: read arguments, call a service, let loaders batch. Rules live in the services.
export const Query: QueryResolvers = {
  users: async (_root, args, ctx) => {
    const users = await ctx.services.users.list(ctx.caller, { role: args.role ?? null, ...page(args.limit, args.offset) }, ctx.reads);
    // The list depends on every row it returned (each user write bumps it too), so the
    // authors of these users' posts are read from here, exactly, with no second statement.
    for (const user of users) ctx.loaders.user.prime(user.id, user);
    return users;
  },

  user: async (_root, args, ctx) => (await ctx.loaders.user.load(checkId('id', args.id))) ?? null,

  posts: (_root, args, ctx, info) => ctx.services.posts.list(ctx.caller, page(args.limit, args.offset), ctx.reads, postColumns(info)),

  post: async (_root, args, ctx) => (await ctx.loaders.postWithLikes.load(checkId('id', args.id)))?.post ?? null,

  books: (_root, args, ctx) => ctx.services.books.list(page(args.limit, args.offset), ctx.reads),

  book: async (_root, args, ctx) => (await ctx.loaders.book.load(checkId('id', args.id))) ?? null,

  me: async (_root, _args, ctx) => {
    const id = signedInId(ctx.caller);
    return id === null ? null : ((await ctx.loaders.user.load(id)) ?? null);
  },
};
