/**
 * Issue 11's realistic traffic: five read shapes over random ids, a share of them
 * signed in, and a share of addReaction writes on random posts with random types (so
 * writes really change data). Pure and seeded: the load generator draws requests from
 * it, and the parity check (bench/mixed/parity.mjs) sends the same shapes to both
 * implementations.
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
  /** The write: one reaction per user, post and type; a repeat returns the stored one. */
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
const ANONYMOUS_READS = ['post', 'user', 'posts'];
const SIGNED_IN_READS = ['post', 'user', 'posts', 'me', 'reactions'];

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

export function requestBody(shape, variables) {
  return JSON.stringify(variables === undefined ? { query: SHAPES[shape].query } : { query: SHAPES[shape].query, variables });
}

/**
 * `data`: { postIds, writablePostIds, userIds } (reads may hit drafts, which anonymous
 * callers see as null; writes go to published posts only), `tokens`: access tokens of
 * the signed-in pool. `writeShare` of all requests are writes; of the reads,
 * `signedInShare` are signed in, spread over all five shapes, the others over the
 * three anonymous ones. Returns next() → { shape, body, token }.
 */
export function createMix({ data, tokens, writeShare = 0, signedInShare = 0.4, seed = 1 }) {
  if (tokens.length === 0 && (writeShare > 0 || signedInShare > 0)) throw new Error('signed-in traffic needs tokens');
  const random = seededRandom(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  return function next() {
    let shape;
    let signedIn = true;
    if (random() < writeShare) shape = 'addReaction';
    else {
      signedIn = random() < signedInShare;
      shape = pick(signedIn ? SIGNED_IN_READS : ANONYMOUS_READS);
    }
    return { shape, body: requestBody(shape, SHAPES[shape].variables(pick, data, random)), token: signedIn ? pick(tokens) : undefined };
  };
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
  const verdict = SHAPES[shape].check?.(json.data);
  return typeof verdict === 'string' ? verdict : undefined;
}
