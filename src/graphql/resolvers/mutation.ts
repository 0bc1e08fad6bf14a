import type { MutationResolvers } from '../generated/resolvers.js';

// Each mutation is one service call; the service checks permissions and inputs.
export const Mutation: MutationResolvers = {
  createUser: (_root, args, ctx) => ctx.services.users.create(ctx.caller, args),
  updateUser: (_root, { id, ...patch }, ctx) => ctx.services.users.update(ctx.caller, id, patch),
  deleteUser: (_root, args, ctx) => ctx.services.users.delete(ctx.caller, args.id),
  createPost: (_root, args, ctx) => ctx.services.posts.create(ctx.caller, args),
  updatePost: (_root, { id, ...patch }, ctx) => ctx.services.posts.update(ctx.caller, id, patch),
  publishPost: (_root, args, ctx) => ctx.services.posts.publish(ctx.caller, args.id),
  deletePost: (_root, args, ctx) => ctx.services.posts.delete(ctx.caller, args.id),
  addBook: (_root, args, ctx) => ctx.services.books.add(ctx.caller, args),
  addReaction: (_root, args, ctx) => ctx.services.reactions.add(ctx.caller, args.postId, args.type),
};
