import { BadUserInputError } from '../errors.js';
import { isRole, ROLES, type Role } from './caller.js';
import type { Page } from './types.js';

/**
 * The input rules of docs/schema.md. Each check throws BadUserInputError naming the
 * argument. Lengths count Unicode code points (`[...s].length`), so an emoji is one
 * character, as a user would count it, not two UTF-16 units.
 */

const NUL = '\u0000';

/** Code points, not UTF-16 units. */
export function charCount(value: string): number {
  let n = 0;
  for (const _ of value) n++;
  return n;
}

/** The NUL character is refused in every string argument (it breaks C-string consumers and PostgreSQL text). */
export function checkNoNul(argument: string, value: string): string {
  if (value.includes(NUL)) throw new BadUserInputError(argument, `${argument} must not contain the NUL character`);
  return value;
}

/** A string of min..max characters (code points) without NUL. */
export function checkText(argument: string, value: string, min: number, max: number): string {
  if (typeof value !== 'string') throw new BadUserInputError(argument, `${argument} must be a string`);
  checkNoNul(argument, value);
  const n = charCount(value);
  if (n < min || n > max) {
    const range = min === 0 ? `at most ${max}` : `${min}–${max}`;
    throw new BadUserInputError(argument, `${argument} must be ${range} characters`);
  }
  return value;
}

function checkInt(argument: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new BadUserInputError(argument, `${argument} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/**
 * An id argument: opaque, but still a string argument, so NUL is refused like
 * everywhere else. No length rule: an id of any other shape is simply unknown.
 */
export function checkId(argument: string, value: string): string {
  return checkNoNul(argument, value);
}

export function checkName(name: string): string {
  return checkText('name', name, 1, 100);
}

// Pragmatic address syntax: an unquoted local part of RFC 5322 "atext" dot-atoms, and a
// domain of at least two DNS labels. Quoted local parts and IP literals are refused: no
// real mailbox a user types needs them, and they are a common source of injection bugs.
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const DOMAIN_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Returns the address trimmed and lower-cased: emails are compared and stored that way. */
export function checkEmail(email: string, argument = 'email'): string {
  if (typeof email !== 'string') throw new BadUserInputError(argument, `${argument} must be a string`);
  checkNoNul(argument, email);
  const value = email.trim().toLowerCase();
  if (value.length === 0 || value.length > 254) {
    throw new BadUserInputError(argument, `${argument} must be a valid email address of at most 254 characters`);
  }
  const at = value.lastIndexOf('@');
  const local = value.slice(0, at);
  const labels = value.slice(at + 1).split('.');
  const valid =
    at > 0 &&
    local.length <= 64 &&
    LOCAL_PART.test(local) &&
    labels.length >= 2 &&
    labels.every((label) => DOMAIN_LABEL.test(label)) &&
    /^[a-z]/.test(labels[labels.length - 1] ?? '');
  if (!valid) throw new BadUserInputError(argument, `${argument} must be a valid email address`);
  return value;
}

/** What a stored email looks like, without refusing anything: for lookups (login, operator script). */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function checkAge(age: number): number {
  return checkInt('age', age, 0, 150);
}

export function checkAvatar(avatar: string): string {
  checkText('avatar', avatar, 1, 2048);
  let url: URL | undefined;
  try {
    url = new URL(avatar);
  } catch {
    url = undefined;
  }
  // `new URL` forgives surrounding spaces; a stored avatar must be usable exactly as given.
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !url.hostname || avatar.trim() !== avatar) {
    throw new BadUserInputError('avatar', 'avatar must be an http(s) URL of at most 2048 characters');
  }
  return avatar;
}

export function checkRole(role: string): Role {
  if (typeof role === 'string') checkNoNul('role', role);
  if (!isRole(role)) throw new BadUserInputError('role', `role must be one of ${ROLES.join(', ')}`);
  return role;
}

export function checkPostTitle(title: string): string {
  return checkText('title', title, 1, 200);
}

export function checkPostContent(content: string): string {
  return checkText('content', content, 0, 50_000);
}

export function checkTags(tags: readonly string[]): string[] {
  if (!Array.isArray(tags) || tags.length > 10) throw new BadUserInputError('tags', 'tags must be a list of at most 10');
  for (const tag of tags) {
    checkNoNul('tags', tag);
    const n = charCount(tag);
    if (n < 1 || n > 32) throw new BadUserInputError('tags', 'each of tags must be 1–32 characters');
  }
  return [...tags];
}

const REACTION_TYPE = /^[a-z0-9_-]{1,32}$/;

export function checkReactionType(type: string): string {
  checkNoNul('type', type);
  if (!REACTION_TYPE.test(type)) {
    throw new BadUserInputError('type', 'type must be 1–32 characters of a-z, 0-9, _ and -');
  }
  return type;
}

export function checkBookTitle(title: string): string {
  return checkText('title', title, 1, 200);
}

export function checkBookAuthor(author: string): string {
  return checkText('author', author, 1, 100);
}

export function checkYear(year: number): number {
  return checkInt('year', year, -3000, 3000);
}

/** `limit` 1–100 and `offset` at least 0, everywhere a list is paged. */
export function checkPage(limit: number, offset: number): Page {
  checkInt('limit', limit, 1, 100);
  checkInt('offset', offset, 0, Number.MAX_SAFE_INTEGER);
  return { limit, offset };
}

/** The name resolvers use: `page(args.limit, args.offset)`. */
export const page = checkPage;

/** The error code of a driver error, when it has one (better-sqlite3 and pg both set `code`). */
function driverCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? (err as { code: unknown }).code : undefined;
}

/** A unique constraint refused the write: SQLite or PostgreSQL (23505). */
export function isUniqueViolation(err: unknown): boolean {
  const code = driverCode(err);
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** A foreign key refused the write (the referenced row vanished meanwhile): SQLite or PostgreSQL (23503). */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = driverCode(err);
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}
