import bcrypt from 'bcrypt';
import type { Db } from '../db/connect.js';
import type { BookRow, PostRow, ReactionRow, UserRow } from '../db/schema.js';
import type { Role } from './caller.js';
import { newId } from './ids.js';
import { isUniqueViolation } from './validate.js';

/** The password of every demo account (documented in the README; never seeded in production). */
export const DEMO_PASSWORD = 'inkwell-demo';

export const DEMO_ACCOUNTS = [
  { name: 'Ada Admin', email: 'admin@inkwell.test', role: 'admin' },
  { name: 'Eddie Editor', email: 'editor@inkwell.test', role: 'editor' },
  { name: 'Edna Editor', email: 'editor2@inkwell.test', role: 'editor' },
  { name: 'Alice Liddell', email: 'alice@inkwell.test', role: 'user' },
  { name: 'Bob Builder', email: 'bob@inkwell.test', role: 'user' },
  { name: 'Carol Danvers', email: 'carol@inkwell.test', role: 'user' },
  { name: 'Dave Bowman', email: 'dave@inkwell.test', role: 'user' },
] as const satisfies readonly { name: string; email: string; role: Role }[];

type DemoEmail = (typeof DEMO_ACCOUNTS)[number]['email'];

/**
 * The start log's line once the demo data are in (src/app.ts): one account to sign in
 * with — an editor, who may write posts as well as read — and where the others are listed.
 */
export function demoSignInNote(publicUrl: string): string {
  const { email } = DEMO_ACCOUNTS[1];
  return `demo data seeded: sign in as ${email} with password ${DEMO_PASSWORD} (every demo account is listed at ${publicUrl}/login)`;
}

/** [author, title, tags, published]; content is derived from the title. */
const POSTS: readonly [DemoEmail, string, string[] | null, boolean][] = [
  ['editor@inkwell.test', 'Welcome to Inkwell', ['announcement', 'meta'], true],
  ['editor@inkwell.test', 'How we choose what to publish', ['editorial'], true],
  ['editor2@inkwell.test', 'Ten novels for a long winter', ['books', 'lists'], true],
  ['editor2@inkwell.test', 'Draft: spring reading list', ['books', 'draft'], false],
  ['admin@inkwell.test', 'House rules', ['meta'], true],
  ['alice@inkwell.test', 'Down the rabbit hole of GraphQL', ['graphql', 'tech'], true],
  ['alice@inkwell.test', 'Notes to self', null, false],
  ['bob@inkwell.test', 'Can we fix it? Writing about refactoring', ['tech', 'refactoring'], true],
  ['bob@inkwell.test', 'On building bookshelves', ['diy'], true],
  ['carol@inkwell.test', 'Poetry in orbit', ['poetry'], true],
  ['dave@inkwell.test', 'Open the pod bay doors: a review', ['review', 'film'], true],
  ['editor@inkwell.test', 'Upcoming: interviews with authors', ['announcement'], false],
];

/** [reactor, post index in POSTS, type]. Only published posts get reactions. */
const REACTIONS: readonly [DemoEmail, number, string][] = [
  ['alice@inkwell.test', 0, 'like'],
  ['bob@inkwell.test', 0, 'like'],
  ['carol@inkwell.test', 0, 'love'],
  ['dave@inkwell.test', 0, 'like'],
  ['alice@inkwell.test', 2, 'like'],
  ['alice@inkwell.test', 2, 'love'],
  ['bob@inkwell.test', 2, 'like'],
  ['editor@inkwell.test', 5, 'like'],
  ['carol@inkwell.test', 5, 'insightful'],
  ['dave@inkwell.test', 7, 'like'],
  ['alice@inkwell.test', 9, 'love'],
  ['bob@inkwell.test', 10, 'laugh'],
  ['admin@inkwell.test', 10, 'like'],
];

const BOOKS: readonly [string, string, number | null][] = [
  ["Alice's Adventures in Wonderland", 'Lewis Carroll', 1865],
  ['Frankenstein', 'Mary Shelley', 1818],
  ['The Left Hand of Darkness', 'Ursula K. Le Guin', 1969],
  ['2001: A Space Odyssey', 'Arthur C. Clarke', 1968],
  ['The Odyssey', 'Homer', -700],
  ['Beloved', 'Toni Morrison', 1987],
];

// Fixed, distinct times one minute apart, so "newest first" is deterministic and
// everything created later through the API sorts before the demo data.
const BASE = Date.parse('2024-01-01T00:00:00.000Z');
const at = (minute: number) => new Date(BASE + minute * 60_000).toISOString();

/**
 * Fills an empty database with demo accounts, posts, reactions and books, in one
 * transaction. Returns false, changing nothing, when there are users already.
 */
export async function seedDemoData(db: Db, opts: { bcryptCost: number }): Promise<boolean> {
  if (await hasUsers(db)) return false;
  // Hashed once for all accounts: seven hashes at cost 12 would take seconds at start-up.
  const passwordHash = await bcrypt.hash(DEMO_PASSWORD, opts.bcryptCost);
  let minute = 0;

  const users: UserRow[] = DEMO_ACCOUNTS.map((account) => ({
    id: newId(),
    name: account.name,
    email: account.email,
    age: null,
    avatar: null,
    role: account.role,
    password_hash: passwordHash,
    created_at: at(minute++),
  }));
  const userId = new Map(users.map((u) => [u.email, u.id]));
  const idOf = (email: DemoEmail) => userId.get(email) as string;

  const posts: PostRow[] = POSTS.map(([author, title, tags, published]) => {
    const createdAt = at(minute++);
    return {
      id: newId(),
      author_id: idOf(author),
      title,
      content: `${title}.\n\nThis is demo content for the Inkwell development database.`,
      published: published ? 1 : 0,
      tags: tags === null ? null : JSON.stringify(tags),
      created_at: createdAt,
      updated_at: createdAt,
    };
  });

  const reactions: ReactionRow[] = REACTIONS.map(([email, postIndex, type]) => ({
    id: newId(),
    post_id: (posts[postIndex] as PostRow).id,
    user_id: idOf(email),
    type,
    created_at: at(minute++),
  }));

  const books: BookRow[] = BOOKS.map(([title, author, year]) => ({
    id: newId(),
    title,
    author,
    year,
    created_at: at(minute++),
  }));

  try {
    return await db.kysely.transaction().execute(async (trx) => {
      // Checked again inside the transaction: another instance may have seeded meanwhile.
      if (await trx.selectFrom('users').select('id').limit(1).executeTakeFirst()) return false;
      await trx.insertInto('users').values(users).execute();
      await trx.insertInto('posts').values(posts).execute();
      await trx.insertInto('reactions').values(reactions).execute();
      await trx.insertInto('books').values(books).execute();
      return true;
    });
  } catch (err) {
    // Two instances starting together on one PostgreSQL: the other one seeded first.
    if (isUniqueViolation(err)) return false;
    throw err;
  }
}

async function hasUsers(db: Db): Promise<boolean> {
  return (await db.kysely.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}
