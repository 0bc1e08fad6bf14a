/**
 * The reference's resolvers and per-request DataLoaders: the field rules of the
 * contract (User.email for the user themself and admins; unpublished posts for their
 * author, editors and admins) checked inline, every list batched into one prepared
 * query per request. No cache beyond the request's own loaders. The mutations the bench
 * sends (addReaction, createPost, updatePost, updateUser) check what Inkwell checks, in
 * the same order, with the same codes; the others answer NOT_IMPLEMENTED.
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

// The input rules of docs/schema.md (src/domain/validate.ts): lengths in code points, NUL refused.
const badInput = (argument, message) => new ErrorWithProps(message, { code: 'BAD_USER_INPUT', argument });
const codePoints = (value) => [...value].length;
function noNul(argument, value) {
  if (value.includes('\u0000')) throw badInput(argument, `${argument} must not contain the NUL character`);
  return value;
}
function text(argument, value, min, max) {
  noNul(argument, value);
  const n = codePoints(value);
  if (n < min || n > max) throw badInput(argument, `${argument} must be ${min === 0 ? `at most ${max}` : `${min}–${max}`} characters`);
  return value;
}
function integer(argument, value, min, max) {
  if (!Number.isInteger(value) || value < min || value > max) throw badInput(argument, `${argument} must be an integer from ${min} to ${max}`);
  return value;
}
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
function email(value) {
  noNul('email', value);
  const v = value.trim().toLowerCase();
  if (v.length === 0 || v.length > 254) throw badInput('email', 'email must be a valid email address of at most 254 characters');
  const at = v.lastIndexOf('@');
  const labels = v.slice(at + 1).split('.');
  const ok = at > 0 && at <= 64 && LOCAL_PART.test(v.slice(0, at)) && labels.length >= 2 && labels.every((l) => DOMAIN_LABEL.test(l)) && /^[a-z]/.test(labels.at(-1));
  if (!ok) throw badInput('email', 'email must be a valid email address');
  return v;
}
function avatar(value) {
  text('avatar', value, 1, 2048);
  let url;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname || value.trim() !== value) {
    throw badInput('avatar', 'avatar must be an http(s) URL of at most 2048 characters');
  }
  return value;
}
const ROLES = ['admin', 'editor', 'user'];
function role(value) {
  noNul('role', value);
  if (!ROLES.includes(value)) throw badInput('role', `role must be one of ${ROLES.join(', ')}`);
  return value;
}
function tagList(tags) {
  if (tags.length > 10) throw badInput('tags', 'tags must be a list of at most 10');
  for (const tag of tags) {
    noNul('tags', tag);
    const n = codePoints(tag);
    if (n < 1 || n > 32) throw badInput('tags', 'each of tags must be 1–32 characters');
  }
  return JSON.stringify(tags);
}
function notNull(argument, value) {
  if (value === null) throw badInput(argument, `${argument} cannot be null`);
  return value;
}

function signedIn(caller) {
  if (!caller) throw fail('UNAUTHENTICATED', 'You must be signed in');
  return caller;
}
/** write:posts (editors and admins), checked before the arguments (docs/permissions.md). */
function writer(caller) {
  if (!canWrite(signedIn(caller))) throw fail('FORBIDDEN', 'You are not allowed to do this');
  return caller;
}
const driverCode = (error) => error?.code;
const isUnique = (error) => ['SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY', '23505'].includes(driverCode(error));
const isForeignKey = (error) => ['SQLITE_CONSTRAINT_FOREIGNKEY', '23503'].includes(driverCode(error));
/** "Set it when given": the flag and the value of one column of a patch statement. */
const patchOf = (value) => (value === undefined ? [0, null] : [1, value]);

/** A post as a write's target: NOT_FOUND when missing or invisible, FORBIDDEN when not the caller's (admins excepted). */
async function postForWrite(store, caller, id) {
  const [row] = await store.all('postsByIds', [store.list([id])]);
  const post = row && toPost(row);
  if (!post || !canSee(caller, post)) throw fail('NOT_FOUND', 'Post not found');
  if (post.authorId !== caller.id && caller.role !== 'admin') throw fail('FORBIDDEN', 'You may only change your own posts');
  return post;
}

/** The row as it is now, also for the rest of the request's answer (the loader may hold the old one). */
async function reload(store, loader, query, id, map, entity) {
  const [row] = await store.all(query, [store.list([id])]);
  if (!row) throw fail('NOT_FOUND', `${entity} not found`);
  const value = map(row);
  loader.clear(id).prime(id, value);
  return value;
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
    // The same checks in the same order as src/domain/posts.ts and users.ts:
    // signed in → permission → arguments → target exists → (posts) the caller's own.
    createPost: async (_root, args, { caller, store, loaders }) => {
      writer(caller);
      noNul('authorId', args.authorId);
      if (args.authorId !== caller.id && caller.role !== 'admin') throw fail('FORBIDDEN', 'You may only write posts as yourself');
      const now = new Date().toISOString();
      const row = {
        id: randomUUID(),
        author_id: args.authorId,
        title: text('title', args.title, 1, 200),
        content: args.content == null ? null : text('content', args.content, 0, 50_000),
        published: args.published ? 1 : 0,
        tags: args.tags == null ? null : tagList(args.tags),
        created_at: now,
        updated_at: now,
      };
      if (!(await loaders.user.load(row.author_id))) throw fail('NOT_FOUND', 'User not found');
      try {
        await store.run('insertPost', [row.id, row.author_id, row.title, row.content, row.published, row.tags, row.created_at, row.updated_at]);
      } catch (error) {
        if (isForeignKey(error)) throw fail('NOT_FOUND', 'User not found');
        throw error;
      }
      return toPost(row);
    },
    updatePost: async (_root, { id, title, content, tags }, { caller, store, loaders }) => {
      writer(caller);
      noNul('id', id);
      const patch = {
        title: title === undefined ? undefined : text('title', notNull('title', title), 1, 200),
        content: content === undefined ? undefined : content === null ? null : text('content', content, 0, 50_000),
        tags: tags === undefined ? undefined : tags === null ? null : tagList(tags),
      };
      const current = await postForWrite(store, caller, id);
      if (Object.values(patch).every((v) => v === undefined)) return current;
      const changed = await store.run('updatePost', [...patchOf(patch.title), ...patchOf(patch.content), ...patchOf(patch.tags), new Date().toISOString(), id]);
      if (changed === 0) throw fail('NOT_FOUND', 'Post not found');
      return reload(store, loaders.post, 'postsByIds', id, toPost, 'Post');
    },
    updateUser: async (_root, { id, ...args }, { caller, store, loaders }) => {
      signedIn(caller);
      const manager = caller.role === 'admin';
      if (!manager && caller.id !== id) throw fail('FORBIDDEN', 'You are not allowed to do this');
      if (!manager && args.role !== undefined) throw fail('FORBIDDEN', 'Only user managers may change a role');
      noNul('id', id);
      const patch = {
        name: args.name === undefined ? undefined : text('name', notNull('name', args.name), 1, 100),
        email: args.email === undefined ? undefined : email(notNull('email', args.email)),
        role: args.role === undefined ? undefined : role(notNull('role', args.role)),
        age: args.age === undefined ? undefined : args.age === null ? null : integer('age', args.age, 0, 150),
        avatar: args.avatar === undefined ? undefined : args.avatar === null ? null : avatar(args.avatar),
      };
      if (Object.values(patch).some((v) => v !== undefined)) {
        let changed;
        try {
          changed = await store.run('updateUser', [
            ...patchOf(patch.name), ...patchOf(patch.email), ...patchOf(patch.age), ...patchOf(patch.avatar), ...patchOf(patch.role), id,
          ]);
        } catch (error) {
          if (isUnique(error)) throw badInput('email', 'Email already in use');
          throw error;
        }
        if (changed === 0) throw fail('NOT_FOUND', 'User not found');
      }
      return reload(store, loaders.user, 'usersByIds', id, toUser, 'User');
    },
    createUser: notInReference,
    deleteUser: notInReference,
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
