import { isVisible } from '../../domain/posts.js';
import { NO_READS } from '../../cache/reads.js';
import type { Post, Reaction, User } from '../../domain/types.js';
import { checkId } from '../../domain/validate.js';
import { filterAsync } from '../../realtime/iterators.js';
import { channels, type PubSub } from '../../realtime/pubsub.js';
import type { SubscriptionResolvers } from '../generated/resolvers.js';

/**
 * Each subscription listens on its own channel (one per post id), so an event for
 * post A never reaches, and is never filtered out by, a subscriber of post B. The
 * payload is the domain record the service published; field rules (`User.email`)
 * then apply per subscriber, through the caller in the context.
 *
 * docs/permissions.md: a post the caller may not see counts as not existing — no events. The
 * filter runs per event with the subscriber's caller, so a draft's reactions reach
 * its author and editors, and everyone once the post is published.
 */
export function createSubscriptionResolvers(pubsub: PubSub): SubscriptionResolvers {
  return {
    userCreated: {
      subscribe: () => pubsub.subscribe<User>(channels.userCreated()),
      resolve: (user: User) => user,
    },
    postPublished: {
      subscribe: (_root, args, ctx) => {
        const postId = checkId('postId', args.postId);
        return filterAsync(pubsub.subscribe<Post>(channels.postPublished(postId)), (post) => isVisible(ctx.caller, post));
      },
      resolve: (post: Post) => post,
    },
    postReactionAdded: {
      subscribe: (_root, args, ctx) => {
        const postId = checkId('postId', args.postId);
        // Through the post cache (never stale after a write), not a loader: the
        // context of a subscription lives as long as the subscription does.
        return filterAsync(
          pubsub.subscribe<Reaction>(channels.postReactionAdded(postId)),
          async (reaction) => (await ctx.services.posts.byId(ctx.caller, reaction.postId, NO_READS)) !== null,
        );
      },
      resolve: (reaction: Reaction) => reaction,
    },
  };
}
