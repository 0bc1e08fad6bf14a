import type { AnonymousCaller, Caller, Role, SignedInCaller } from '../../domain/caller.js';

/**
 * Who may share a cached response is decided by what its execution read of the caller
 * (docs/decisions.md, "keys by what was read of the caller"): nothing — everyone;
 * whether signed in or the role — everyone with that role; the identity — that user.
 * Recorded, not guessed from the document: the execution gets a caller whose fields
 * note their own reads, so every rule (`can`, visibility, `User.email`, `me`) counts.
 */
export const SHARED = 0;
export const ROLE = 1;
export const USER = 2;
export type Level = typeof SHARED | typeof ROLE | typeof USER;

export class CallerScope {
  /** The most specific part of the caller the execution read so far. */
  level: Level = SHARED;
  /** The caller to execute with: reading its fields raises `level`. */
  readonly caller: Caller;

  constructor(readonly real: Caller) {
    this.caller = real.kind === 'user' ? new ObservedUser(real, this) : new ObservedAnonymous(this);
  }

  read(level: Level): void {
    if (level > this.level) this.level = level;
  }
}

class ObservedAnonymous implements AnonymousCaller {
  constructor(private readonly scope: CallerScope) {}
  get kind(): 'anonymous' {
    this.scope.read(ROLE);
    return 'anonymous';
  }
}

class ObservedUser implements SignedInCaller {
  constructor(
    private readonly real: SignedInCaller,
    private readonly scope: CallerScope,
  ) {}
  get kind(): 'user' {
    this.scope.read(ROLE);
    return 'user';
  }
  get role(): Role {
    this.scope.read(ROLE);
    return this.real.role;
  }
  get id(): string {
    this.scope.read(USER);
    return this.real.id;
  }
  get sessionId(): string | null {
    this.scope.read(USER);
    return this.real.sessionId;
  }
}

/** The part of a cache key that says who may share the entry. */
export function scopeKey(caller: Caller, level: Level): string {
  if (level === SHARED) return 's';
  if (caller.kind === 'anonymous') return 'a';
  return level === ROLE ? `r:${caller.role}` : `u:${caller.role}:${caller.id}`;
}

/** The levels a caller's lookup tries, broadest first: anonymous callers have no identity. */
export function levelsOf(caller: Caller): readonly Level[] {
  return caller.kind === 'user' ? ALL_LEVELS : ANONYMOUS_LEVELS;
}

const ALL_LEVELS: readonly Level[] = [SHARED, ROLE, USER];
const ANONYMOUS_LEVELS: readonly Level[] = [SHARED, ROLE];
