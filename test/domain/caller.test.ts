import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Audience } from '../../src/cache/sharing.js';
import { ANONYMOUS, can, canSeeUnpublished, isSelf, isSignedIn, signedInId, type Caller } from '../../src/domain/caller.js';

/**
 * Who may share a cached answer is said by the rules of src/domain/caller.ts where they
 * decide (docs/caching.md, "Who shares an answer"): each tells the caller's audience
 * whether its answer depended on the role or on the identity.
 */
function heard(caller: Caller): { caller: Caller; said: () => string[] } {
  const said: string[] = [];
  const audience: Audience = {
    dependsOnRole: () => said.push('role'),
    dependsOnNotBeing: (id) => said.push(`not ${id}`),
    dependsOnIdentity: () => said.push('identity'),
  };
  return { caller: { ...caller, audience }, said: () => [...new Set(said)] };
}

const editor: Caller = { kind: 'user', id: 'u-ed', role: 'editor', sessionId: null };
const user: Caller = { kind: 'user', id: 'u-1', role: 'user', sessionId: null };

describe('the caller rules say what their answer depended on', () => {
  it('a permission depends on the role only', () => {
    const h = heard(editor);
    expect(can(h.caller, 'write:posts')).toBe(true);
    expect(h.said()).toEqual(['role']);
  });

  it('being signed in depends on the role only (anonymous is a role of its own)', () => {
    const h = heard(ANONYMOUS);
    expect(isSignedIn(h.caller)).toBe(false);
    expect(h.said()).toEqual(['role']);
  });

  it('the identity, and being someone, depend on the identity', () => {
    const a = heard(user);
    expect(signedInId(a.caller)).toBe('u-1');
    expect(a.said()).toContain('identity');
    const b = heard(user);
    expect(isSelf(b.caller, 'u-1')).toBe(true);
    expect(b.said()).toEqual(['role', 'identity']);
  });

  it('not being someone depends on the role, less that someone', () => {
    const h = heard(user);
    expect(isSelf(h.caller, 'u-2')).toBe(false);
    expect(isSelf(h.caller, 'u-3')).toBe(false);
    expect(h.said()).toEqual(['role', 'not u-2', 'not u-3']);
  });

  it('an anonymous caller never depends on an identity it has not got', () => {
    const h = heard(ANONYMOUS);
    expect(signedInId(h.caller)).toBeNull();
    expect(isSelf(h.caller, 'u-1')).toBe(false);
    expect(h.said()).toEqual(['role']);
  });

  it('a visibility the role settles never depends on the identity', () => {
    const byRole = heard(editor);
    expect(canSeeUnpublished(byRole.caller, 'someone-else')).toBe(true);
    expect(byRole.said()).toEqual(['role']);
    const bySelf = heard(user);
    expect(canSeeUnpublished(bySelf.caller, 'u-1')).toBe(true);
    expect(bySelf.said()).toEqual(['role', 'identity']);
    const byOther = heard(user);
    expect(canSeeUnpublished(byOther.caller, 'u-2')).toBe(false);
    expect(byOther.said()).toEqual(['role', 'not u-2']);
  });
});

describe('services and resolvers ask the rules', () => {
  // A field read directly would decide an answer without telling the audience, and the
  // response cache would share that answer too widely.
  const folders = ['src/domain', 'src/graphql/resolvers'];
  const files = folders.flatMap((folder) => readdirSync(folder).filter((f) => f.endsWith('.ts')).map((f) => join(folder, f)));

  it('never read a caller\'s kind, role, id or session directly', () => {
    const direct = files
      .filter((file) => !file.endsWith('domain/caller.ts'))
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
          .filter(({ line }) => /\bcaller\.(kind|role|id|sessionId)\b/.test(line)),
      );
    expect(files.length).toBeGreaterThan(5);
    expect(direct).toEqual([]);
  });
});
