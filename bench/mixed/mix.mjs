/**
 * The realistic traffic of the mixed bench: five read shapes over random ids, a share of
 * them signed in, and a share of writes. Pure and seeded: the load generator draws
 * requests from it, and the parity check (bench/mixed/parity.mjs) sends the same shapes
 * to every implementation. The mixes (bench/README.md):
 *
 * - `standard`: the read shapes in fixed proportions, documents with variables, writes
 *   `addReaction` (like one time in four) — the mix of issue 11, kept as the baseline;
 * - `weights`: the same shapes in proportions drawn from a seed (drawWeights);
 * - `literal`: the same, with every id and argument written into the document (no
 *   variables): thousands of distinct documents;
 * - `writes`: the standard reads with writes of every kind (WRITE_KINDS: addReaction of
 *   twelve types, createPost, updatePost, updateUser), each answering `{ id }` or more;
 * - `writes-only`: those writes alone.
 */

export const SHAPES = {
  /** A post page: the post with its author and like count. */
  post: {
    query: 'query Post($id: ID!) { post(id: $id) { id title content published tags likes createdAt author { id name } } }',
    variables: (pick, data) => ({ id: pick(data.postIds) }),
  },
  /** A profile: the user with their five newest posts. */
  user: {
    query: 'query User($id: ID!) { user(id: $id) { id name avatar createdAt posts(limit: 5) { id title createdAt } } }',
    variables: (pick, data) => ({ id: pick(data.userIds) }),
  },
  /** The front page: the first page of posts. */
  posts: {
    query: 'query FrontPage { posts { id title createdAt author { id name } } }',
    variables: () => undefined,
  },
  /** The signed-in caller with their posts (drafts included). */
  me: {
    query: 'query Me { me { id name email posts(limit: 5) { id title published } } }',
    variables: () => undefined,
    signedIn: true,
    check: (data) => data.me !== null || 'me is null: the token was not accepted',
  },
  /** A signed-in post page with its reactions. */
  reactions: {
    query:
      'query PostReactions($id: ID!) { post(id: $id) { id title likes reactions(limit: 10) { id type createdAt user { id name } } } }',
    variables: (pick, data) => ({ id: pick(data.postIds) }),
    signedIn: true,
  },
  /** The standard mix's write: one reaction per user, post and type; a repeat returns the stored one. */
  addReaction: {
    query:
      'mutation React($postId: ID!, $type: String!) { addReaction(postId: $postId, type: $type) { id type post { id likes } } }',
    variables: (pick, data, random) => ({ postId: pick(data.writablePostIds), type: random() < 0.25 ? 'like' : pick(REACTION_TYPES) }),
    signedIn: true,
    write: true,
    check: (data) => typeof data.addReaction?.id === 'string' || 'addReaction returned no id',
  },
};

const REACTION_TYPES = ['love', 'laugh', 'wow', 'sad', 'insightful', 'celebrate', 'curious', 'support', 'thanks', 'fire', 'eyes'];
/** The `writes` mixes' reaction types: like is one of twelve. */
export const ALL_REACTION_TYPES = ['like', ...REACTION_TYPES];
export const READ_SHAPES = ['post', 'user', 'posts', 'me', 'reactions'];
const ANONYMOUS_READS = ['post', 'user', 'posts'];

const LOREM = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';
const lorem = (n) => `Edited ${n}. ${LOREM.repeat(1 + (n % 4))}`;
const someOf = (random, fields) => {
  const chosen = fields.filter(() => random() < 0.5);
  return chosen.length > 0 ? chosen : [fields[0]];
};

/**
 * The writes of the `writes` mixes. `who`: `user` (the signed-in pool, each acting on
 * themself) or `editor` (role editor, writing and changing their own posts — createPost
 * and updatePost need write:posts, docs/permissions.md). `share`: of the writes.
 * Each answers either `{ id }` or the richer selection, half and half.
 */
export const WRITE_KINDS = {
  addReaction: {
    share: 0.4,
    who: 'user',
    name: 'React',
    args: [['postId', 'ID!'], ['type', 'String!']],
    rich: '{ id type createdAt user { id name } post { id title likes } }',
    variables: ({ pick, data }) => ({ postId: pick(data.writablePostIds), type: pick(ALL_REACTION_TYPES) }),
  },
  updatePost: {
    share: 0.25,
    who: 'editor',
    name: 'UpdatePost',
    args: [['id', 'ID!'], ['title', 'String'], ['content', 'String'], ['tags', '[String!]']],
    rich: '{ id title content tags published likes createdAt author { id name } reactions(limit: 5) { type user { id } } }',
    variables: ({ pick, random, writer, n }) => {
      const v = { id: pick(writer.postIds) };
      for (const field of someOf(random, ['title', 'content', 'tags'])) {
        if (field === 'title') v.title = `Post ${n} (edited)`;
        if (field === 'content') v.content = lorem(n);
        if (field === 'tags') v.tags = ['bench', `e${n % 20}`];
      }
      return v;
    },
  },
  updateUser: {
    share: 0.2,
    who: 'user',
    name: 'UpdateUser',
    args: [['id', 'ID!'], ['name', 'String'], ['age', 'Int'], ['avatar', 'String']],
    rich: '{ id name email age avatar role postsCount posts(limit: 3) { id title published } }',
    variables: ({ random, writer, n }) => {
      const v = { id: writer.id };
      for (const field of someOf(random, ['name', 'age', 'avatar'])) {
        if (field === 'name') v.name = `Bench User ${n % 1000}`;
        if (field === 'age') v.age = 18 + (n % 70);
        if (field === 'avatar') v.avatar = `https://avatars.inkwell.test/${n}.png`;
      }
      return v;
    },
  },
  createPost: {
    share: 0.15,
    who: 'editor',
    name: 'CreatePost',
    args: [['title', 'String!'], ['content', 'String'], ['authorId', 'ID!'], ['tags', '[String!]'], ['published', 'Boolean']],
    rich: '{ id title content tags published likes createdAt author { id name email } reactions(limit: 5) { id } }',
    variables: ({ random, writer, n }) => ({
      title: `New post ${n}`,
      content: lorem(n),
      authorId: writer.id,
      tags: ['bench', `n${n % 20}`],
      published: random() < 0.5,
    }),
  },
};

/** `kind/selection`, e.g. `createPost/id`: the shape name of a write of the `writes` mixes. */
export const writeShape = (kind, selection) => `${kind}/${selection}`;

/** A GraphQL literal of a JSON value (strings as JSON strings: GraphQL reads the same escapes). */
export function graphqlLiteral(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(graphqlLiteral).join(', ')}]`;
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** The document of a write of the `writes` mixes, and its request body (variables, or inlined when `literal`). */
export function writeBody(kind, selection, variables, literal = false) {
  const k = WRITE_KINDS[kind];
  const answer = selection === 'id' ? '{ id }' : k.rich;
  if (literal) {
    const args = k.args.filter(([name]) => variables[name] !== undefined).map(([name]) => `${name}: ${graphqlLiteral(variables[name])}`);
    return JSON.stringify({ query: `mutation ${k.name} { ${kind}(${args.join(', ')}) ${answer} }` });
  }
  // One document per kind and selection; absent variables leave their argument out.
  const defs = k.args.map(([name, type]) => `$${name}: ${type}`).join(', ');
  const args = k.args.map(([name]) => `${name}: $${name}`).join(', ');
  return JSON.stringify({ query: `mutation ${k.name}(${defs}) { ${kind}(${args}) ${answer} }`, variables });
}

/** A query with its variables written into the text: `query Post { post(id: "…") { … } }`. */
export function inlineVariables(query, variables) {
  let text = query.replace(/^(\s*(?:query|mutation)(?:\s+\w+)?)\s*\([^)]*\)/, '$1');
  for (const [name, value] of Object.entries(variables ?? {})) {
    text = text.replace(new RegExp(`\\$${name}\\b`, 'g'), graphqlLiteral(value));
  }
  return text;
}

/** mulberry32: a small, fast seeded PRNG (uniform in [0, 1)). */
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The `weights` mix's proportions of the five read shapes, from a seed: uniform on the
 * simplex (normalised exponentials, none drawn below 0.02). Signed-in reads pick among all
 * five by these weights, anonymous ones among post, user and posts by theirs.
 */
export function drawWeights(seed) {
  const random = seededRandom(seed ^ 0x5eed);
  const raw = READ_SHAPES.map(() => Math.max(0.02, -Math.log(1 - random())));
  const sum = raw.reduce((a, b) => a + b, 0);
  return Object.fromEntries(READ_SHAPES.map((shape, i) => [shape, raw[i] / sum]));
}

/** Each read shape's share of all reads, given the signed-in share (uniform weights when none). */
export function readShares(weights, signedInShare) {
  const w = weights ?? Object.fromEntries(READ_SHAPES.map((s) => [s, 1]));
  const total = (shapes) => shapes.reduce((a, s) => a + w[s], 0);
  return Object.fromEntries(
    READ_SHAPES.map((s) => [
      s,
      signedInShare * (w[s] / total(READ_SHAPES)) + (ANONYMOUS_READS.includes(s) ? (1 - signedInShare) * (w[s] / total(ANONYMOUS_READS)) : 0),
    ]),
  );
}

export function requestBody(shape, variables) {
  return JSON.stringify(variables === undefined ? { query: SHAPES[shape].query } : { query: SHAPES[shape].query, variables });
}

function weightedPicker(random, entries) {
  const total = entries.reduce((a, [, w]) => a + w, 0);
  return () => {
    let x = random() * total;
    for (const [value, w] of entries) {
      x -= w;
      if (x < 0) return value;
    }
    return entries[entries.length - 1][0];
  };
}

/**
 * `data`: { postIds, writablePostIds, userIds } (reads may hit drafts, which anonymous
 * callers see as null; writes go to published posts only), `tokens`: access tokens of
 * the signed-in pool. `writeShare` of all requests are writes; of the reads,
 * `signedInShare` are signed in, spread over all five shapes, the others over the
 * three anonymous ones. `kind`: the mix (see the top of this file); `weights` (the
 * `weights` mix: drawWeights' proportions); `writeKinds` (optional shares of the write
 * kinds, instead of WRITE_KINDS'); `writers` (the `writes` mixes):
 * { users: [{ token, id }], editors: [{ token, id, postIds }] }.
 * Returns next() → { shape, body, token }.
 */
export function createMix({ data, tokens, writers, kind = 'standard', weights, writeKinds, writeShare = 0, signedInShare = 0.4, seed = 1 }) {
  if (tokens.length === 0 && (writeShare > 0 || signedInShare > 0)) throw new Error('signed-in traffic needs tokens');
  const everyKind = kind === 'writes' || kind === 'writes-only';
  if (everyKind && (!writers?.users?.length || !writers?.editors?.length)) throw new Error(`the ${kind} mix needs writers (users and editors)`);
  const literal = kind === 'literal';
  const random = seededRandom(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const w = weights ?? Object.fromEntries(READ_SHAPES.map((s) => [s, 1]));
  const signedInRead = weightedPicker(random, READ_SHAPES.map((s) => [s, w[s]]));
  const anonymousRead = weightedPicker(random, ANONYMOUS_READS.map((s) => [s, w[s]]));
  // `writeKinds` ({ kind: share }) replaces WRITE_KINDS' shares, e.g. to time one kind alone.
  const writeKind = weightedPicker(random, Object.entries(WRITE_KINDS).map(([k, def]) => [k, writeKinds ? (writeKinds[k] ?? 0) : def.share]));
  const share = kind === 'writes-only' ? 1 : writeShare;

  function everyKindWrite() {
    const k = writeKind();
    const def = WRITE_KINDS[k];
    const writer = pick(def.who === 'editor' ? writers.editors : writers.users);
    const selection = random() < 0.5 ? 'id' : 'rich';
    const variables = def.variables({ pick, random, data, writer, n: Math.floor(random() * 1e9) });
    return { shape: writeShape(k, selection), body: writeBody(k, selection, variables), token: writer.token };
  }

  return function next() {
    if (random() < share) {
      if (everyKind) return everyKindWrite();
      return { shape: 'addReaction', body: bodyOf('addReaction', SHAPES.addReaction.variables(pick, data, random), literal), token: pick(tokens) };
    }
    const signedIn = random() < signedInShare;
    const shape = signedIn ? signedInRead() : anonymousRead();
    return { shape, body: bodyOf(shape, SHAPES[shape].variables(pick, data, random), literal), token: signedIn ? pick(tokens) : undefined };
  };
}

function bodyOf(shape, variables, literal) {
  if (!literal || variables === undefined) return requestBody(shape, variables);
  return JSON.stringify({ query: inlineVariables(SHAPES[shape].query, variables) });
}

/** undefined when a response is right, else what is wrong with it. */
export function checkResponse(shape, status, text) {
  if (status !== 200) return `HTTP ${status}: ${text.slice(0, 200)}`;
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    return `not JSON: ${text.slice(0, 200)}`;
  }
  if (json.errors) return `errors: ${JSON.stringify(json.errors).slice(0, 300)}`;
  if (!json.data) return 'no data';
  const kind = shape.includes('/') ? shape.slice(0, shape.indexOf('/')) : undefined;
  if (kind) return typeof json.data[kind]?.id === 'string' ? undefined : `${kind} returned no id`;
  const verdict = SHAPES[shape].check?.(json.data);
  return typeof verdict === 'string' ? verdict : undefined;
}
