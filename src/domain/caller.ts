/**
 * Who is asking. Transports fill it in (from a bearer token or cookie, re-read per
 * request); services and resolvers only ask `can()`, never compare role strings.
 * The response cache may hand them a caller whose fields record what was read of it
 * (src/graphql/cache/scope.ts), so ask about the role before the identity where either
 * would do: a result that read only the role is shared by everyone of that role.
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
}

export interface AnonymousCaller {
  readonly kind: 'anonymous';
}

export type Caller = SignedInCaller | AnonymousCaller;

export const ANONYMOUS: AnonymousCaller = Object.freeze({ kind: 'anonymous' });

export function can(caller: Caller, permission: Permission): boolean {
  return caller.kind === 'user' && PERMISSIONS[caller.role].has(permission);
}

export function isSelf(caller: Caller, userId: string): boolean {
  return caller.kind === 'user' && caller.id === userId;
}

/** Unpublished posts are visible to their author and to whoever may write posts (editors, admins). */
export function canSeeUnpublished(caller: Caller, authorId: string): boolean {
  return can(caller, 'write:posts') || isSelf(caller, authorId);
}
