/**
 * The reference's resolvers and per-request DataLoaders: the field rules of the
 * contract (User.email for the user themself and admins; unpublished posts for their
 * author, editors and admins) checked inline, every list batched into one prepared
 * query per request. No cache beyond the request's own loaders.
 */
import { randomUUID } from 'node:crypto';
import DataLoader from 'dataloader';
import mercurius from 'mercurius';

const { ErrorWithProps } = mercurius;

const canWrite = (caller) => caller?.role === 'admin' || caller?.role === 'editor';
const canSee = (caller, post) => post.published || post.authorId === caller?.id || canWrite(caller);
/** The two visibility parameters of bench/reference/queries.mjs. */
const visibility = (caller) => [caller?.id ?? '', canWrite(caller) ? 1 : 0];

const fail = (code, message) => new ErrorWithProps(message, { code });

function page(limit, offset) {
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw fail('BAD_USER_INPUT', 'limit must be an integer from 1 to 100');
  if (!Number.isInteger(offset) || offset < 0) throw fail('BAD_USER_INPUT', 'offset must be a non-negative integer');
  return [limit, offset];
}

const toUser = (r) => ({ id: r.id, name: r.name, email: r.email, age: r.age, avatar: r.avatar, role: r.role, createdAt: r.created_at });
const toPost = (r) => ({
  id: r.id,
  authorId: r.author_id,
  title: r.title,
  content: r.content,
  published: Number(r.published) === 1,
  tags: r.tags === null ? null : JSON.parse(r.tags),
  createdAt: r.created_at,
});
const toReaction = (r) => ({ id: r.id, postId: r.post_id, userId: r.user_id, type: r.type, createdAt: r.created_at });
const toBook = (r) => ({ id: r.id, title: r.title, author: r.author, year: r.year, createdAt: r.created_at });

/** Rows in the order of `ids` (undefined where missing). */
function inOrder(rows, ids, map) {
  const byId = new Map(rows.map((r) => [r.id, map(r)]));
  return ids.map((id) => byId.get(id));
}

function grouped(rows, ids, key, map) {
  const groups = new Map(ids.map((id) => [id, []]));
  for (const r of rows) groups.get(r[key])?.push(map(r));
  return ids.map((id) => groups.get(id));
}

function counts(rows, ids, key) {
  const byId = new Map(rows.map((r) => [r[key], Number(r.n)]));
  return ids.map((id) => byId.get(id) ?? 0);
}

export function createLoaders(store, caller) {
  const see = visibility(caller);
  const byIds = (query, map) => new DataLoader(async (ids) => inOrder(await store.all(query, [store.list(ids)]), ids, map));
  // One loader per (field, page): a batch query takes one limit and offset for all keys.
  const paged = new Map();
  const perPage = (field, limit, offset, batch) => {
    const key = `${field}:${limit}:${offset}`;
    if (!paged.has(key)) paged.set(key, new DataLoader(batch));
    return paged.get(key);
  };
  return {
    user: byIds('usersByIds', toUser),
    post: byIds('postsByIds', toPost),
    book: byIds('booksByIds', toBook),
    likes: new DataLoader(async (ids) => counts(await store.all('likesByPosts', [store.list(ids)]), ids, 'post_id')),
    postsCount: new DataLoader(async (ids) =>
      counts(await store.all('postsCountByAuthors', [store.list(ids), ...see]), ids, 'author_id'),
    ),
    postsByAuthor: (limit, offset) =>
      perPage('posts', limit, offset, async (ids) =>
        grouped(await store.all('postsByAuthors', [store.list(ids), ...see, offset, offset + limit]), ids, 'author_id', toPost),
      ),
    reactionsByPost: (limit, offset) =>
      perPage('reactions', limit, offset, async (ids) =>
        grouped(await store.all('reactionsByPosts', [store.list(ids), offset, offset + limit]), ids, 'post_id', toReaction),
      ),
  };
}

const notInReference = () => {
  throw fail('NOT_IMPLEMENTED', 'not implemented in the bench reference');
};

export const resolvers = {
  Query: {
    users: async (_root, { role, limit, offset }, { store }) => {
      const rows = role == null
        ? await store.all('usersPage', page(limit, offset))
        : await store.all('usersByRolePage', [role, ...page(limit, offset)]);
      return rows.map(toUser);
    },
    user: async (_root, { id }, { loaders }) => (await loaders.user.load(id)) ?? null,
    posts: async (_root, { limit, offset }, { store, caller }) =>
      (await store.all('postsPage', [...visibility(caller), ...page(limit, offset)])).map(toPost),
    post: async (_root, { id }, { loaders, caller }) => {
      const post = await loaders.post.load(id);
      return post && canSee(caller, post) ? post : null;
    },
    books: async (_root, { limit, offset }, { store }) => (await store.all('booksPage', page(limit, offset))).map(toBook),
    book: async (_root, { id }, { loaders }) => (await loaders.book.load(id)) ?? null,
    me: async (_root, _args, { caller, loaders }) => (caller ? ((await loaders.user.load(caller.id)) ?? null) : null),
  },
  Mutation: {
    addReaction: async (_root, { postId, type }, { caller, store, loaders }) => {
      if (!caller) throw fail('UNAUTHENTICATED', 'You must be signed in');
      if (!/^[a-z0-9_-]{1,32}$/.test(type)) throw fail('BAD_USER_INPUT', 'type must be 1–32 characters of a-z, 0-9, _ and -');
      const post = await loaders.post.load(postId);
      if (!post || !canSee(caller, post)) throw fail('NOT_FOUND', 'Post not found');
      // One reaction per user, post and type: a repeat finds the stored one.
      await store.run('insertReaction', [randomUUID(), postId, caller.id, type, new Date().toISOString()]);
      const [row] = await store.all('reactionByKey', [postId, caller.id, type]);
      if (!row) throw fail('NOT_FOUND', 'Post not found');
      return toReaction(row);
    },
    createUser: notInReference,
    updateUser: notInReference,
    deleteUser: notInReference,
    createPost: notInReference,
    updatePost: notInReference,
    publishPost: notInReference,
    deletePost: notInReference,
    addBook: notInReference,
  },
  User: {
    email: (user, _args, { caller }) => (caller && (caller.id === user.id || caller.role === 'admin') ? user.email : null),
    posts: (user, { limit, offset }, { loaders }) => loaders.postsByAuthor(...page(limit, offset)).load(user.id),
    postsCount: (user, _args, { loaders }) => loaders.postsCount.load(user.id),
  },
  Post: {
    author: (post, _args, { loaders }) => loaders.user.load(post.authorId),
    likes: (post, _args, { loaders }) => loaders.likes.load(post.id),
    reactions: (post, { limit, offset }, { loaders }) => loaders.reactionsByPost(...page(limit, offset)).load(post.id),
  },
  Reaction: {
    user: (reaction, _args, { loaders }) => loaders.user.load(reaction.userId),
    post: async (reaction, _args, { loaders, caller }) => {
      const post = await loaders.post.load(reaction.postId);
      return post && canSee(caller, post) ? post : null;
    },
  },
};
