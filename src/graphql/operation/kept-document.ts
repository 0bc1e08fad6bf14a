import type { ASTNode, DocumentNode, Location, Source } from 'graphql';

/**
 * What a cached document keeps once it is validated (docs/limits.md, "Memory"): it is
 * held for as long as it is cached, and each major collection marks every object of it.
 * The parser gives every node a Location linked to the document's whole token list;
 * after validation only execution errors read locations: graphql-js from `loc.source`
 * and `loc.start` of the nodes named here, graphql-jit from `loc.startToken.line` and
 * `.column` when it compiles. Those nodes keep a small location that answers both;
 * every other node's is dropped, and with them the token list. Empty lists (each
 * field's arguments and directives) become one shared list: nothing mutates an AST.
 */
const LOCATED = new Set<string>([
  'OperationDefinition',
  'Field',
  'Directive',
  'VariableDefinition',
  'Variable',
  'NamedType',
  'ListType',
  'NonNullType',
]);

/** One empty list for them all: the parser makes a new `[]` for each field's arguments and directives. */
const NONE: readonly never[] = Object.freeze([]);

/** A location without tokens: its own line and column stand in for its start token's. */
class KeptLocation {
  readonly start: number;
  readonly end: number;
  readonly source: Source;
  readonly line: number;
  readonly column: number;

  constructor(loc: Location) {
    this.start = loc.start;
    this.end = loc.end;
    this.source = loc.source;
    this.line = loc.startToken.line;
    this.column = loc.startToken.column;
  }

  get startToken(): { line: number; column: number } {
    return this;
  }
}

/** Trims a validated document in place (above). */
export function trimKeptDocument(document: DocumentNode): void {
  trim(document);
}

function trim(node: ASTNode): void {
  const fields = node as unknown as Record<string, unknown>;
  for (const key in fields) {
    const value = fields[key];
    if (key === 'loc') {
      if (!value) continue;
      if (LOCATED.has(node.kind)) fields.loc = new KeptLocation(value as Location);
      // The parser adds `loc` last, so deleting it takes a node back to its shape when
      // unlocated (with no slot for it); the document's has `tokenCount` after it: cleared.
      else if (node.kind === 'Document') fields.loc = undefined;
      else delete fields.loc;
    } else if (Array.isArray(value)) {
      if (value.length === 0) fields[key] = NONE;
      for (const child of value) if (child !== null && typeof child === 'object') trim(child as ASTNode);
    } else if (value !== null && typeof value === 'object' && 'kind' in value) trim(value as ASTNode);
  }
}
