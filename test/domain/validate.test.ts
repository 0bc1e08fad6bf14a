import { describe, it, expect } from 'vitest';
import {
  checkAge,
  checkAvatar,
  checkBookAuthor,
  checkBookTitle,
  checkEmail,
  checkId,
  checkName,
  checkPage,
  checkPostContent,
  checkPostTitle,
  checkReactionType,
  checkRole,
  checkTags,
  checkYear,
  isForeignKeyViolation,
  isUniqueViolation,
} from '../../src/domain/validate.js';
import { BadUserInputError } from '../../src/errors.js';

const s = (n: number, c = 'a') => c.repeat(n);
const emoji = '😀'; // two UTF-16 units, one character

type Case = [label: string, run: () => unknown, argument: string | null];

/** `argument: null` = accepted; otherwise refused with BAD_USER_INPUT naming it. */
const cases: Case[] = [
  ['name 1 char', () => checkName('a'), null],
  ['name 100 chars', () => checkName(s(100)), null],
  ['name empty', () => checkName(''), 'name'],
  ['name 101 chars', () => checkName(s(101)), 'name'],
  ['name 100 emoji (code points, not units)', () => checkName(s(100, emoji)), null],
  ['name 101 emoji', () => checkName(s(101, emoji)), 'name'],
  ['name with NUL', () => checkName('a\u0000b'), 'name'],
  ['name with HTML kept verbatim', () => checkName('<b>x</b>'), null],

  ['email plain', () => checkEmail('a@b.co'), null],
  ['email 254 chars', () => checkEmail(`${s(64)}@${s(63, 'b')}.${s(63, 'c')}.${s(61, 'd')}`), null],
  ['email 255 chars', () => checkEmail(`${s(64)}@${s(63, 'b')}.${s(63, 'c')}.${s(62, 'd')}`), 'email'],
  ['email local part 65', () => checkEmail(`${s(65)}@b.co`), 'email'],
  ['email without @', () => checkEmail('ab.co'), 'email'],
  ['email without domain dot', () => checkEmail('a@localhost'), 'email'],
  ['email two @', () => checkEmail('a@b@c.co'), 'email'],
  ['email space inside', () => checkEmail('a b@c.co'), 'email'],
  ['email double dot', () => checkEmail('a..b@c.co'), 'email'],
  ['email empty', () => checkEmail(''), 'email'],
  ['email NUL', () => checkEmail('a\u0000@b.co'), 'email'],
  ['email plus tag', () => checkEmail('a+tag@b.co'), null],

  ['age 0', () => checkAge(0), null],
  ['age 150', () => checkAge(150), null],
  ['age -1', () => checkAge(-1), 'age'],
  ['age 151', () => checkAge(151), 'age'],
  ['age fractional', () => checkAge(1.5), 'age'],

  ['avatar https', () => checkAvatar('https://example.com/a.png'), null],
  ['avatar http', () => checkAvatar('http://example.com/a.png'), null],
  ['avatar 2048 chars', () => checkAvatar(`https://e.com/${s(2048 - 14)}`), null],
  ['avatar 2049 chars', () => checkAvatar(`https://e.com/${s(2049 - 14)}`), 'avatar'],
  ['avatar javascript:', () => checkAvatar('javascript:alert(1)'), 'avatar'],
  ['avatar data:', () => checkAvatar('data:image/png;base64,AAAA'), 'avatar'],
  ['avatar not a URL', () => checkAvatar('not a url'), 'avatar'],
  ['avatar NUL', () => checkAvatar('https://e.com/\u0000'), 'avatar'],

  ['title 200', () => checkPostTitle(s(200)), null],
  ['title 201', () => checkPostTitle(s(201)), 'title'],
  ['title empty', () => checkPostTitle(''), 'title'],
  ['content empty', () => checkPostContent(''), null],
  ['content 50000', () => checkPostContent(s(50_000)), null],
  ['content 50001', () => checkPostContent(s(50_001)), 'content'],
  ['content 50000 emoji', () => checkPostContent(s(50_000, emoji)), null],
  ['content NUL', () => checkPostContent('x\u0000'), 'content'],

  ['tags 10', () => checkTags(Array.from({ length: 10 }, (_, i) => `t${i}`)), null],
  ['tags 11', () => checkTags(Array.from({ length: 11 }, (_, i) => `t${i}`)), 'tags'],
  ['tags empty list', () => checkTags([]), null],
  ['tag 32 chars', () => checkTags([s(32)]), null],
  ['tag 33 chars', () => checkTags([s(33)]), 'tags'],
  ['tag empty', () => checkTags(['']), 'tags'],
  ['tag NUL', () => checkTags(['a\u0000']), 'tags'],

  ['type like', () => checkReactionType('like'), null],
  ['type a-z0-9_-', () => checkReactionType('thumbs_up-2'), null],
  ['type 32', () => checkReactionType(s(32)), null],
  ['type 33', () => checkReactionType(s(33)), 'type'],
  ['type empty', () => checkReactionType(''), 'type'],
  ['type upper case', () => checkReactionType('Like'), 'type'],
  ['type emoji', () => checkReactionType(emoji), 'type'],
  ['type NUL', () => checkReactionType('like\u0000'), 'type'],

  ['book title 200', () => checkBookTitle(s(200)), null],
  ['book title 201', () => checkBookTitle(s(201)), 'title'],
  ['book author 100', () => checkBookAuthor(s(100)), null],
  ['book author 101', () => checkBookAuthor(s(101)), 'author'],
  ['book author empty', () => checkBookAuthor(''), 'author'],
  ['year -3000', () => checkYear(-3000), null],
  ['year 3000', () => checkYear(3000), null],
  ['year -3001', () => checkYear(-3001), 'year'],
  ['year 3001', () => checkYear(3001), 'year'],

  ['role admin', () => checkRole('admin'), null],
  ['role editor', () => checkRole('editor'), null],
  ['role user', () => checkRole('user'), null],
  ['role Admin', () => checkRole('Admin'), 'role'],
  ['role superuser', () => checkRole('superuser'), 'role'],
  ['role NUL', () => checkRole('admin\u0000'), 'role'],

  ['limit 1', () => checkPage(1, 0), null],
  ['limit 100', () => checkPage(100, 0), null],
  ['limit 0', () => checkPage(0, 0), 'limit'],
  ['limit 101', () => checkPage(101, 0), 'limit'],
  ['offset -1', () => checkPage(10, -1), 'offset'],
  ['offset large', () => checkPage(10, 2_147_483_647), null],

  ['id plain', () => checkId('id', 'abc'), null],
  ['id NUL', () => checkId('id', 'a\u0000'), 'id'],
];

describe('input rules (docs/schema.md)', () => {
  it.each(cases)('%s', (_label, run, argument) => {
    if (argument === null) {
      expect(run).not.toThrow();
      return;
    }
    let thrown: unknown;
    try {
      run();
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(BadUserInputError);
    expect(thrown).toMatchObject({ code: 'BAD_USER_INPUT', argument });
    expect((thrown as Error).message).toContain(argument);
  });

  it('returns emails trimmed and lower-cased', () => {
    expect(checkEmail('  Alice@Example.COM ')).toBe('alice@example.com');
  });

  it('keeps strings verbatim', () => {
    expect(checkPostTitle(' <script>x</script> ')).toBe(' <script>x</script> ');
  });

  it('tells unique and foreign-key violations of both databases apart', () => {
    expect(isUniqueViolation({ code: 'SQLITE_CONSTRAINT_UNIQUE' })).toBe(true);
    expect(isUniqueViolation({ code: '23505' })).toBe(true);
    expect(isUniqueViolation({ code: '23503' })).toBe(false);
    expect(isUniqueViolation(new Error('x'))).toBe(false);
    expect(isForeignKeyViolation({ code: 'SQLITE_CONSTRAINT_FOREIGNKEY' })).toBe(true);
    expect(isForeignKeyViolation({ code: '23503' })).toBe(true);
    expect(isForeignKeyViolation(null)).toBe(false);
  });
});
