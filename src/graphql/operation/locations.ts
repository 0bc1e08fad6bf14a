import type { ASTNode, DocumentNode, Location, Source } from 'graphql';

/**
 * What a cached document keeps of its locations once it is validated (docs/limits.md,
 * "Memory"). The parser gives every node a Location linked to the document's whole token
 * list; a kept document holds them for as long as it is cached, and a major collection
 * marks each one. After validation only execution errors read locations: graphql-js
 * from `loc.source` and `loc.start` of the nodes named here, graphql-jit from
 * `loc.startToken.line` and `.column` when it compiles. Those nodes keep a small location
 * that answers both; every other node's is dropped, and with them the token list.
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

/** Drops, in place, the locations that nothing reads after validation (above). */
export function trimLocations(document: DocumentNode): void {
  trim(document);
}

function trim(node: ASTNode): void {
  const fields = node as unknown as Record<string, unknown>;
  for (const key in fields) {
    const value = fields[key];
    if (key === 'loc') {
      if (value) fields.loc = LOCATED.has(node.kind) ? new KeptLocation(value as Location) : undefined;
    } else if (Array.isArray(value)) {
      for (const child of value) if (child !== null && typeof child === 'object') trim(child as ASTNode);
    } else if (value !== null && typeof value === 'object' && 'kind' in value) trim(value as ASTNode);
  }
}
