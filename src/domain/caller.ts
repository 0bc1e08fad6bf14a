import type { Audience } from '../cache/sharing.js';

/**
 * Who is asking. Transports fill it in (from a bearer token or cookie, re-read per
 * request); services and resolvers only ask the rules below, never read a caller's
 * fields or compare role strings. Each rule says what its answer depended on to the
 * caller's audience, when it has one: that is who may share a cached answer
 * (docs/caching.md, "Who shares an answer").
 */
export const ROLES = ['admin', 'editor', 'user'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export type Permission = 'read:posts' | 'write:posts' | 'delete:posts' | 'manage:users';

/** The permission table of docs/permissions.md — the only place roles map to rights. */
const PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  admin: new Set(['read:posts', 'write:posts', 'delete:posts', 'manage:users']),
  editor: new Set(['read:posts', 'write:posts']),
  user: new Set(['read:posts']),
};

export interface SignedInCaller {
  readonly kind: 'user';
  readonly id: string;
  readonly role: Role;
  /** The session the access token belongs to, when it came from one. */
  readonly sessionId: string | null;
  readonly audience?: Audience;
}

export interface AnonymousCaller {
  readonly kind: 'anonymous';
  readonly audience?: Audience;
}

export type Caller = SignedInCaller | AnonymousCaller;

export const ANONYMOUS: AnonymousCaller = Object.freeze({ kind: 'anonymous' });

export function can(caller: Caller, permission: Permission): boolean {
  caller.audience?.dependsOnRole();
  return caller.kind === 'user' && PERMISSIONS[caller.role].has(permission);
}

/** Signed in at all: the same answer for everyone of a role, and for every anonymous caller. */
export function isSignedIn(caller: Caller): caller is SignedInCaller {
  caller.audience?.dependsOnRole();
  return caller.kind === 'user';
}

/** The signed-in user's id, or null: an answer built from it is that user's alone. */
export function signedInId(caller: Caller): string | null {
  if (!isSignedIn(caller)) return null;
  caller.audience?.dependsOnIdentity();
  return caller.id;
}

/** Being that user depends on the identity; not being them is every other caller's of the role too. */
export function isSelf(caller: Caller, userId: string): boolean {
  if (!isSignedIn(caller)) return false;
  if (caller.id !== userId) {
    caller.audience?.dependsOnNotBeing(userId);
    return false;
  }
  caller.audience?.dependsOnIdentity();
  return true;
}

/** Unpublished posts are visible to their author and to whoever may write posts (editors, admins). */
export function canSeeUnpublished(caller: Caller, authorId: string): boolean {
  return can(caller, 'write:posts') || isSelf(caller, authorId);
}
