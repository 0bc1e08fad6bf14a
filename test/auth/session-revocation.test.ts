import { describe, expect, it } from 'vitest';
import { SessionMemo } from '../../src/cache/session-memo.js';
import { tags } from '../../src/cache/reads.js';
import { LocalVersions } from '../../src/cache/versions.js';

/**
 * docs/accounts.md and docs/limits.md: no eviction makes a revoked session valid again. A remembered lookup
 * stands only while its versions are unchanged; a revocation bumps the session's tag,
 * and when that tag is later evicted from the versions the floor rises to its version,
 * so the tag never reads as the remembered version again. (The revocation itself is the
 * session row's `revoked_at`, in the database, which no cache holds.)
 */
describe('a revoked session', () => {
  it('stays revoked however many other tags push its version out', () => {
    const versions = new LocalVersions(undefined, 3);
    const memo = new SessionMemo<string>(versions);
    const remembered = memo.before('s1', 'u1')!;
    memo.remember('s1', remembered, 'live');
    expect(memo.get('s1', 'u1')).toBe('live');

    versions.bumpNow([tags.session('s1')]); // revoked
    for (let i = 0; i < 100; i++) versions.bumpNow([tags.post(`p${i}`)]); // the flood
    expect(memo.get('s1', 'u1')).toBeUndefined();
  });

  it('and so does a memo entry remembered before the session tag was ever bumped', () => {
    const versions = new LocalVersions(undefined, 2);
    for (let i = 0; i < 5; i++) versions.bumpNow([tags.post(`early${i}`)]); // the floor is above 0 already
    const memo = new SessionMemo<string>(versions);
    const remembered = memo.before('s2', 'u2')!;
    versions.bumpNow([tags.session('s2')]);
    for (let i = 0; i < 10; i++) versions.bumpNow([tags.user(`other${i}`)]);
    memo.remember('s2', remembered, 'live'); // a read that raced the revocation
    expect(memo.get('s2', 'u2')).toBeUndefined();
  });
});
