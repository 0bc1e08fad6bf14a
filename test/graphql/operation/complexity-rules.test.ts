import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { buildSchema, parse, specifiedRules, validate } from 'graphql';
import {
  collectFragments,
  complexityDependsOnVariables,
  complexityError,
  computeComplexity,
  countTokensWithin,
  maxAliasesRule,
  maxDepthRule,
} from '../../../src/graphql/operation/limits.js';
import { expandedFields, MAX_EXPANDED_FIELDS } from '../../../src/graphql/operation/fields.js';

const schema = buildSchema(readFileSync('src/graphql/schema.graphql', 'utf8'));

function check(doc: string, rule = maxDepthRule(7)) {
  return validate(schema, parse(doc), [...specifiedRules, rule]);
}

function cost(doc: string, variables?: Record<string, unknown> | null, operationName?: string) {
  return computeComplexity(schema, parse(doc), operationName, variables);
}

/** users → posts → author → posts → author … with `levels` fields in all, ending in `name` or `id`. */
function nested(levels: number): string {
  const path = ['users'];
  while (path.length < levels - 1) path.push(path.length % 2 === 1 ? 'posts' : 'author');
  const leaf = path[path.length - 1] === 'posts' ? 'id' : 'name';
  return '{ ' + path.map((f) => `${f} { `).join('') + leaf + ' }'.repeat(path.length) + ' }';
}

describe('maxDepthRule', () => {
  it('passes the docs/limits.md example of depth 4', () => {
    expect(check('{ users { posts { author { name } } } }', maxDepthRule(4))).toEqual([]);
    const errors = check('{ users { posts { author { name } } } }', maxDepthRule(3));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toBe('Query depth 4 exceeds the maximum of 3');
  });

  it('passes depth 7 and refuses depth 8 at max 7, once, with MAX_DEPTH', () => {
    expect(nested(8)).toBe('{ users { posts { author { posts { author { posts { author { name } } } } } } } }');
    expect(check(nested(7))).toEqual([]);
    const errors = check(nested(8));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toBe('Query depth 8 exceeds the maximum of 7');
    expect(errors[0]?.extensions).toEqual({ code: 'MAX_DEPTH' });
  });

  it('counts named fragments where spread', () => {
    const doc = `
      query { users { ...P } }
      fragment P on User { posts { author { posts { author { posts { author { name } } } } } } }`;
    expect(check(doc)[0]?.message).toBe('Query depth 8 exceeds the maximum of 7');
    expect(check(doc, maxDepthRule(8))).toEqual([]);
  });

  it('counts inline fragments where spread', () => {
    const doc = '{ users { ... on User { posts { author { posts { author { posts { ... { author { name } } } } } } } } } }';
    expect(check(doc)[0]?.extensions).toEqual({ code: 'MAX_DEPTH' });
  });

  it('counts nested fragment spreads and a fragment spread at different depths', () => {
    const doc = `
      { users { ...A posts { author { posts { author { ...A } } } } } }
      fragment A on User { ...B }
      fragment B on User { posts { id } }`;
    // users(1) posts(2) author(3) posts(4) author(5) + B: posts(6) id(7)
    expect(check(doc)).toEqual([]);
    expect(check(doc, maxDepthRule(6))[0]?.message).toBe('Query depth 7 exceeds the maximum of 6');
  });

  it('reports each operation separately', () => {
    const doc = `query A ${nested(8)} query B ${nested(8)} query C { me { name } }`;
    expect(check(doc)).toHaveLength(2);
  });

  it('ignores introspection but counts __typename as a level', () => {
    const introspection = '{ __schema { types { fields { type { ofType { ofType { ofType { ofType { name } } } } } } } } }';
    expect(check(introspection, maxDepthRule(1))).toEqual([]);
    expect(check('{ __type(name: "User") { fields { type { ofType { ofType { name } } } } } }', maxDepthRule(1))).toEqual([]);
    expect(check('{ users { __typename } }', maxDepthRule(2))).toEqual([]);
    expect(check('{ users { __typename } }', maxDepthRule(1))[0]?.message).toBe('Query depth 2 exceeds the maximum of 1');
  });

  it('terminates on cyclic fragments (the spec rules report them)', () => {
    const doc = `
      { users { ...A } }
      fragment A on User { posts { author { ...B } } }
      fragment B on User { ...A }`;
    const errors = check(doc);
    expect(errors.some((e) => /cannot spread fragment/i.test(e.message))).toBe(true);
  });

  it('stays fast for fragments spread exponentially many times', () => {
    let doc = '{ users { ...F0 } }\n';
    for (let i = 0; i < 60; i++) doc += `fragment F${i} on User { ...F${i + 1} ...F${i + 1} }\n`;
    doc += 'fragment F60 on User { posts { id } }';
    const started = Date.now();
    expect(validate(schema, parse(doc), [maxDepthRule(7), maxAliasesRule(30)])).toEqual([]);
    expect(computeComplexity(schema, parse(doc), undefined, undefined)).toBe(20 * (1 + 2 ** 60 * 10));
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

describe('computeComplexity', () => {
  it('matches the docs/limits.md examples', () => {
    expect(cost('{ users { posts { author { name } } } }')).toBe(420);
    expect(cost('{ users(limit: 100) { posts(limit: 10) { author { name } } } }')).toBe(2100);
  });

  it('costs single objects 1 plus their selection, scalars 0', () => {
    expect(cost('{ me { name } }')).toBe(1);
    expect(cost('{ me { name posts(limit: 5) { title } } post(id: "1") { author { id } } }')).toBe(1 + 5 + 2);
    expect(cost('{ __typename }')).toBe(0);
  });

  it('sums the root fields and counts mutations', () => {
    expect(cost('{ users { id } posts { id } books { id } }')).toBe(60);
    expect(cost('mutation { createPost(title: "t", authorId: "1") { author { id } reactions { id } } }')).toBe(1 + 1 + 20);
  });

  it('counts named and inline fragments where spread, twice when spread twice', () => {
    const fragment = 'fragment P on User { posts { author { name } } }';
    expect(cost(`{ users { ...P } } ${fragment}`)).toBe(420);
    expect(cost(`{ users { ...P ...P } } ${fragment}`)).toBe(20 * (1 + 2 * 20));
    expect(cost(`{ me { ...P } users { ...P } } ${fragment}`)).toBe(1 + 20 + 420);
    expect(cost('{ users { ... on User { posts { ... { author { name } } } } } }')).toBe(420);
  });

  it('takes limit from a variable, else its declared default, else the schema default', () => {
    const doc = 'query Q($n: Int, $m: Int = 3) { users(limit: $n) { posts(limit: $m) { id } } }';
    expect(cost(doc, { n: 5, m: 2 })).toBe(5 * (1 + 2));
    expect(cost(doc, { n: 5 })).toBe(5 * (1 + 3));
    expect(cost(doc, {})).toBe(20 * (1 + 3));
    expect(cost(doc, null)).toBe(20 * (1 + 3));
    expect(cost(doc, { n: null })).toBe(20 * (1 + 3));
  });

  it('clamps limit to 0..100', () => {
    expect(cost('{ users(limit: 500) { id } }')).toBe(100);
    expect(cost('query($n: Int) { users(limit: $n) { id } }', { n: 500 })).toBe(100);
    expect(cost('{ users(limit: -5) { posts { id } } }')).toBe(0);
    expect(cost('{ users(limit: 0) { id } }')).toBe(0);
  });

  it('honours @skip and @include, literal or variable', () => {
    expect(cost('{ users @skip(if: true) { id } me { id } }')).toBe(1);
    expect(cost('{ users @include(if: false) { id } me { id } }')).toBe(1);
    expect(cost('{ users @skip(if: false) @include(if: true) { id } }')).toBe(20);
    const doc = 'query($s: Boolean!, $i: Boolean = true) { users @skip(if: $s) { id } posts @include(if: $i) { id } }';
    expect(cost(doc, { s: true, i: false })).toBe(0);
    expect(cost(doc, { s: false })).toBe(40);
    const fragments = 'query($s: Boolean!) { users { ...P @skip(if: $s) ... @include(if: $s) { posts { id } } } } fragment P on User { posts { id } }';
    expect(cost(fragments, { s: true })).toBe(20 * (1 + 10));
    expect(cost(fragments, { s: false })).toBe(20 * (1 + 10));
  });

  it('costs introspection and unknown fields 0', () => {
    expect(cost('{ __schema { types { fields { name } } } __type(name: "User") { name } }')).toBe(0);
    expect(cost('{ nope { id } users { id nope { id } } }')).toBe(20);
    expect(cost('{ users { ...Missing } }')).toBe(20);
  });

  it('picks the operation by name and accepts a pre-built fragment map', () => {
    const doc = parse('query A { users { id } } query B { me { ...M } } fragment M on User { posts { id } }');
    expect(computeComplexity(schema, doc, 'A', undefined)).toBe(20);
    expect(computeComplexity(schema, doc, 'B', undefined, collectFragments(doc))).toBe(1 + 10);
    expect(computeComplexity(schema, doc, undefined, undefined)).toBe(0); // ambiguous
  });
});

describe('complexityDependsOnVariables', () => {
  it('is false for static documents', () => {
    expect(complexityDependsOnVariables(parse('{ users(limit: 5) { posts { id } } }'))).toBe(false);
    expect(complexityDependsOnVariables(parse('query($id: ID!) { user(id: $id) { posts @skip(if: false) { id } } }'))).toBe(false);
  });

  it('is true for a variable limit or condition, also inside fragments', () => {
    expect(complexityDependsOnVariables(parse('query($n: Int) { users(limit: $n) { id } }'))).toBe(true);
    expect(complexityDependsOnVariables(parse('query($s: Boolean!) { users { id @include(if: $s) } }'))).toBe(true);
    const viaFragment = 'query($n: Int) { me { ...P } } fragment P on User { ... { posts(limit: $n) { id } } }';
    expect(complexityDependsOnVariables(parse(viaFragment))).toBe(true);
  });

  it('looks only at the chosen operation', () => {
    const doc = parse('query A { users { id } } query B($n: Int) { users(limit: $n) { id } }');
    expect(complexityDependsOnVariables(doc, 'A')).toBe(false);
    expect(complexityDependsOnVariables(doc, 'B')).toBe(true);
  });
});

describe('maxAliasesRule', () => {
  const aliases = (n: number) => Array.from({ length: n }, (_, i) => `a${i}: id`).join(' ');

  it('allows 30 aliases and refuses 31 with MAX_COMPLEXITY', () => {
    expect(check(`{ me { ${aliases(30)} } }`, maxAliasesRule(30))).toEqual([]);
    const errors = check(`{ me { ${aliases(31)} } }`, maxAliasesRule(30));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toBe('Query too complex');
    expect(errors[0]?.extensions).toEqual({ code: 'MAX_COMPLEXITY' });
  });

  it('counts aliases through fragment spreads', () => {
    const doc = `{ me { ...F ...F } } fragment F on User { ${aliases(16)} }`;
    expect(check(doc, maxAliasesRule(32))).toEqual([]);
    expect(check(doc, maxAliasesRule(30))[0]?.extensions).toEqual({ code: 'MAX_COMPLEXITY' });
  });
});

describe('countTokensWithin', () => {
  it('passes a normal document and refuses one over the limit', () => {
    expect(countTokensWithin('{ users { posts { author { name } } } }', 2000)).toBeUndefined();
    // `{ me { name } }` is 6 tokens; comments are not tokens.
    expect(countTokensWithin('# a comment\n{ me { name } }', 6)).toBeUndefined();
    const error = countTokensWithin('{ me { name } }', 5);
    expect(error?.message).toBe('Query too complex');
    expect(error?.extensions).toEqual({ code: 'MAX_COMPLEXITY' });
    const big = `{ me { ${'name '.repeat(3000)} } }`;
    expect(countTokensWithin(big, 2000)?.extensions).toEqual({ code: 'MAX_COMPLEXITY' });
  });

  it('leaves syntax errors to the parser', () => {
    expect(countTokensWithin('{ me { name "unterminated } }', 2000)).toBeUndefined();
    expect(countTokensWithin('{ me ^ }', 2000)).toBeUndefined();
  });
});

describe('complexityError', () => {
  it('says only "Query too complex" with MAX_COMPLEXITY', () => {
    const error = complexityError(2100, 1000);
    expect(error.message).toBe('Query too complex');
    expect(error.extensions).toEqual({ code: 'MAX_COMPLEXITY' });
  });
});

describe('expandedFields', () => {
  const fields = (doc: string, operationName?: string) => expandedFields(schema, parse(doc), operationName);

  it('counts every field once fragments are spread, scalars included, __typename not', () => {
    expect(fields('{ users { id name posts { id } } __typename }')).toBe(5);
    expect(fields('{ a: users { ...U } b: users { ...U } } fragment U on User { id posts { id author { name } } }')).toBe(2 + 2 * 5);
    expect(fields('{ posts { ... on Post { id title } } }')).toBe(3);
  });

  it('ignores limit, @skip and @include: what is compiled, not what is returned', () => {
    expect(cost('{ users(limit: 0) { posts { id } } }')).toBe(0);
    expect(fields('{ users(limit: 0) { posts { id } } }')).toBe(3);
    expect(fields('{ users @skip(if: true) { id } }')).toBe(2);
  });

  it('multiplies through fragments that spread each other, memoised per fragment', () => {
    // Each level spreads the next twice: 2^12 paths, counted without walking them.
    const levels = 12;
    const fragments = Array.from({ length: levels }, (_, k) =>
      k === levels - 1 ? `fragment F${k} on User { id }` : `fragment F${k} on User { a: posts(limit: 0) { author { ...F${k + 1} } } b: posts(limit: 0) { author { ...F${k + 1} } } }`,
    );
    const doc = `{ users(limit: 0) { ...F0 } } ${fragments.join(' ')}`;
    expect(fields(doc)).toBeGreaterThan(MAX_EXPANDED_FIELDS * 10);
    expect(cost(doc)).toBe(0);
  });

  it('counts the chosen operation only', () => {
    expect(fields('query A { users { id } } query B { posts { id title } }', 'B')).toBe(3);
  });
});
