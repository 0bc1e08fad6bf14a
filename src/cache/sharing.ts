/**
 * Who may share a cached response is decided by what its execution depended on of the
 * caller (docs/caching.md, "Who shares an answer"): nothing — everyone;
 * whether signed in or the role — everyone with that role; not being some users — everyone
 * else with that role; the identity — that user.
 * Said by the rules themselves, not guessed from the document: every rule of
 * src/domain/caller.ts (`can`, `isSelf`, `signedInId`, …) tells the caller's audience
 * what its answer depended on, so visibility, `User.email` and `me` all count.
 */
export const SHARED = 0;
export const ROLE = 1;
export const USER = 2;
export type Level = typeof SHARED | typeof ROLE | typeof USER;

/** What a key is made of: the caller's kind, role and identity (src/domain/caller.ts's callers are such). */
export type SharingCaller = { readonly kind: 'anonymous' } | { readonly kind: 'user'; readonly role: string; readonly id: string };

/** Told by the caller rules what an answer depends on: the role (or being anonymous), not being a user, or the identity. */
export interface Audience {
  dependsOnRole(): void;
  /** The caller was asked whether they are `userId`, and is not: the answer is the role's, but not that user's. */
  dependsOnNotBeing(userId: string): void;
  dependsOnIdentity(): void;
}

/**
 * One execution's audience: the rules of src/domain/caller.ts tell it what their answers
 * depended on, and the most specific part decides the key (`scopeKey`).
 */
export class CallerScope implements Audience {
  /** The most specific part of the caller the execution's rules depended on so far. */
  level: Level = SHARED;
  /** At the role's level: the users it is not for (the rules asked whether the caller was each, and it was not). */
  excluded: Set<string> | undefined;

  constructor(readonly caller: SharingCaller) {}

  dependsOnRole(): void {
    if (this.level < ROLE) this.level = ROLE;
  }

  dependsOnNotBeing(userId: string): void {
    this.dependsOnRole();
    (this.excluded ??= new Set()).add(userId);
  }

  dependsOnIdentity(): void {
    this.level = USER;
  }
}

/** The part of a cache key that says who may share the entry. */
export function scopeKey(caller: SharingCaller, level: Level): string {
  if (level === SHARED) return 's';
  if (caller.kind === 'anonymous') return 'a';
  return level === ROLE ? `r:${caller.role}` : `u:${caller.role}:${caller.id}`;
}

/** The levels a caller's lookup tries, broadest first: anonymous callers have no identity. */
export function levelsOf(caller: SharingCaller): readonly Level[] {
  return caller.kind === 'user' ? ALL_LEVELS : ANONYMOUS_LEVELS;
}

const ALL_LEVELS: readonly Level[] = [SHARED, ROLE, USER];
const ANONYMOUS_LEVELS: readonly Level[] = [SHARED, ROLE];

/** Whether an entry kept for a role (less the users it excludes) is for this caller. */
export function isExcluded(caller: SharingCaller, excluded: ReadonlySet<string> | undefined): boolean {
  return excluded !== undefined && caller.kind === 'user' && excluded.has(caller.id);
}

/**
 * Whether an answer that depended on `scope` (so far) of its caller is also `caller`'s:
 * the key it would be kept under is the one `caller`'s lookup tries at that level.
 */
export function admits(scope: CallerScope, caller: SharingCaller): boolean {
  const { level } = scope;
  return scopeKey(caller, level) === scopeKey(scope.caller, level) && !(level === ROLE && isExcluded(caller, scope.excluded));
}
