import { Kind, Token, parse, print, visit, type ASTNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { trimKeptDocument } from '../../../src/graphql/operation/kept-document.js';

/**
 * A cached document is trimmed once validated (src/graphql/operation/kept-document.ts):
 * the nodes whose locations execution errors read keep where they are, the rest lose
 * theirs, and no token stays reachable. What errors show over the wire is tested in
 * test/graphql/http/errors-and-masking.test.ts and executable.test.ts.
 */
const TEXT = `query Feed($limit: Int = 3, $ids: [ID!]!) {
  posts(limit: $limit) @include(if: true) { ...Card }
  # a comment
  users(ids: $ids) { id, name }
}
fragment Card on Post { id title author { name } }`;

const LOCATED = new Set<string>([
  Kind.OPERATION_DEFINITION,
  Kind.FIELD,
  Kind.DIRECTIVE,
  Kind.VARIABLE_DEFINITION,
  Kind.VARIABLE,
  Kind.NAMED_TYPE,
  Kind.LIST_TYPE,
  Kind.NON_NULL_TYPE,
]);

function nodesOf(document: ASTNode): ASTNode[] {
  const nodes: ASTNode[] = [];
  visit(document, { enter: (node) => void nodes.push(node) });
  return nodes;
}

/** Every object reachable from `root`, the AST's own and its locations'. */
function reachable(root: object): Set<object> {
  const seen = new Set<object>();
  const stack: object[] = [root];
  while (stack.length > 0) {
    const value = stack.pop()!;
    if (seen.has(value)) continue;
    seen.add(value);
    for (const key of Object.keys(value)) {
      const child = (value as Record<string, unknown>)[key];
      if (child !== null && typeof child === 'object') stack.push(child);
    }
    const start = (value as { startToken?: unknown }).startToken;
    if (start !== null && typeof start === 'object') stack.push(start);
  }
  return seen;
}

describe('a kept document', () => {
  it('keeps the locations execution errors read, with their line and column, and drops the rest', () => {
    const document = parse(TEXT);
    const before = nodesOf(document).map((node) => ({
      kind: node.kind,
      start: node.loc!.start,
      line: node.loc!.startToken.line,
      column: node.loc!.startToken.column,
    }));
    trimKeptDocument(document);
    const after = nodesOf(document);
    expect(after).toHaveLength(before.length);
    let kept = 0;
    after.forEach((node, i) => {
      if (LOCATED.has(node.kind)) {
        kept++;
        expect({ kind: node.kind, start: node.loc!.start, line: node.loc!.startToken.line, column: node.loc!.startToken.column }).toEqual(before[i]);
        expect(node.loc!.source.body).toBe(TEXT);
      } else {
        expect(node.loc).toBeUndefined();
      }
    });
    expect(kept).toBeGreaterThan(10);
    expect(print(document)).toBe(print(parse(TEXT)));
  });

  it('holds no token, and shares one empty list', () => {
    const document = parse(TEXT);
    expect([...reachable(document)].some((value) => value instanceof Token)).toBe(true);
    trimKeptDocument(document);
    expect([...reachable(document)].some((value) => value instanceof Token)).toBe(false);
    const empties = nodesOf(document).flatMap((node) =>
      Object.values(node).filter((value): value is unknown[] => Array.isArray(value) && value.length === 0),
    );
    expect(empties.length).toBeGreaterThan(5);
    expect(new Set(empties).size).toBe(1);
    expect(Object.isFrozen(empties[0])).toBe(true);
  });
});
