import { can, isSelf } from '../../domain/caller.js';
import { page } from '../../domain/validate.js';
import type { Post as WholePost, PostListing } from '../../domain/types.js';
import type { PostResolvers, ReactionResolvers, UserResolvers } from '../generated/resolvers.js';
import { postColumns } from './selection.js';

// Fields not listed here resolve by property access on the domain records.

export const User: UserResolvers = {
  // docs/permissions.md: the user themself or an admin; null for everyone else (not an error).
  // The role first: an admin's answer is then shared by all admins (src/cache/sharing.ts).
  email: (user, _args, ctx) => (can(ctx.caller, 'manage:users') || isSelf(ctx.caller, user.id) ? user.email : null),
  posts: (user, args, ctx, info) => ctx.loaders.postsByAuthor(page(args.limit, args.offset), postColumns(info)).load(user.id),
  postsCount: (user, _args, ctx) => ctx.loaders.postsCount.load(user.id),
};

/** A post with its content and tags; a listing here would mean `postColumns` missed a selection. */
function whole(post: PostListing): WholePost {
  if ('content' in post) return post as WholePost;
  throw new Error('a post listing reached a field it does not hold');
}

export const Post: PostResolvers = {
  content: (post) => whole(post).content,
  tags: (post) => whole(post).tags,
  // A missing author (deleted mid-request) becomes null and is reported by the non-null rule.
  author: async (post, _args, ctx) => (await ctx.loaders.user.load(post.authorId))!,
  likes: (post, _args, ctx) => ctx.loaders.likes.load(post.id),
  reactions: (post, args, ctx) => ctx.loaders.reactionsByPost(page(args.limit, args.offset)).load(post.id),
};

export const Reaction: ReactionResolvers = {
  user: async (reaction, _args, ctx) => (await ctx.loaders.user.load(reaction.userId))!,
  // Through the post cache (null when the caller may not see it): after addReaction this
  // read refills the entry the write invalidated, and its like count primes `likes`.
  post: async (reaction, _args, ctx) => (await ctx.loaders.postWithLikes.load(reaction.postId))?.post ?? null!,
};
