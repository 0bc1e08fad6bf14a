/**
 * Query limits (docs/limits.md): token count, depth, aliases and complexity (cost).
 * Fragment results are memoised per fragment name, so a chain of fragments that each
 * spread the next one twice cannot cost exponential time to evaluate; a fragment met
 * again inside its own evaluation (a cycle) counts 0 (docs/design-notes.md#query-limits).
 */
import {
  GraphQLError, Kind, Lexer, Source, TokenKind, getNamedType, getNullableType, getOperationAST,
  isCompositeType, isInterfaceType, isListType, isObjectType,
} from 'graphql';
import type {
  ArgumentNode, ASTVisitor, DirectiveNode, DocumentNode, FieldNode, FragmentDefinitionNode,
  GraphQLArgument, GraphQLCompositeType, GraphQLField, GraphQLSchema, OperationDefinitionNode, SelectionSetNode,
  ValidationContext, ValidationRule, ValueNode,
} from 'graphql';
import type { WireCode } from '../../errors.js';
import { MAX_INPUT_NESTING, tooDeep } from './nesting.js';

/** `limit` is 1–100 (docs/schema.md), so no list field can return more than this many objects. */
const MAX_LIMIT = 100;

type FragmentLookup = (name: string) => FragmentDefinitionNode | null | undefined;

/**
 * docs/limits.md gives tokens, aliases and cost one code and one message; the message is the same
 * for all three so that nothing about the limits' internals leaks to clients.
 */
function tooComplex(): GraphQLError {
  return new GraphQLError('Query too complex', { extensions: { code: 'MAX_COMPLEXITY' satisfies WireCode } });
}

/** The error for a cost over the ceiling; cost and max stay server-side (logs), not in extensions. */
export function complexityError(_cost: number, _max: number): GraphQLError {
  return tooComplex();
}

/**
 * Counts the document's tokens (comments are not tokens, as in graphql's own `maxTokens`)
 * and stops as soon as the count passes maxTokens, so a huge body is not lexed to the end.
 * A lexing error is left for the parser to report as GRAPHQL_PARSE_FAILED.
 */
export function countTokensWithin(source: string, maxTokens: number): GraphQLError | undefined {
  const lexer = new Lexer(new Source(source));
  let count = 0;
  let nesting = 0;
  try {
    for (let kind = lexer.advance().kind; kind !== TokenKind.EOF; kind = lexer.advance().kind) {
      if (++count > maxTokens) return tooComplex();
      // Braces, parentheses and list brackets nest; the parser and validation recurse on them.
      if (kind === TokenKind.BRACE_L || kind === TokenKind.PAREN_L || kind === TokenKind.BRACKET_L) {
        if (++nesting > MAX_INPUT_NESTING) return tooDeep('The document').errors[0];
      } else if (kind === TokenKind.BRACE_R || kind === TokenKind.PAREN_R || kind === TokenKind.BRACKET_R) {
        nesting--;
      }
    }
  } catch {
    // a syntax error: not ours to report
  }
  return undefined;
}

/** `__schema` / `__type` subtrees are exempt from depth and cost (tools ask them deep). */
function isIntrospection(name: string): boolean {
  return name === '__schema' || name === '__type';
}

function viaFragment(name: string, getFragment: FragmentLookup, memo: Map<string, number>, compute: (set: SelectionSetNode) => number): number {
  const known = memo.get(name);
  if (known !== undefined) return known;
  const fragment = getFragment(name);
  if (!fragment) return 0;
  memo.set(name, 0); // placeholder: a cyclic spread reached from inside counts 0
  const value = compute(fragment.selectionSet);
  memo.set(name, value);
  return value;
}

function selectionDepth(set: SelectionSetNode, getFragment: FragmentLookup, memo: Map<string, number>): number {
  const recur = (s: SelectionSetNode): number => selectionDepth(s, getFragment, memo);
  let max = 0;
  for (const sel of set.selections) {
    let depth = 0;
    if (sel.kind === Kind.FIELD) {
      if (isIntrospection(sel.name.value)) continue;
      depth = 1 + (sel.selectionSet ? recur(sel.selectionSet) : 0);
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      depth = recur(sel.selectionSet);
    } else {
      depth = viaFragment(sel.name.value, getFragment, memo, recur);
    }
    if (depth > max) max = depth;
  }
  return max;
}

function aliasCount(set: SelectionSetNode, getFragment: FragmentLookup, memo: Map<string, number>): number {
  const recur = (s: SelectionSetNode): number => aliasCount(s, getFragment, memo);
  let total = 0;
  for (const sel of set.selections) {
    if (sel.kind === Kind.FIELD) {
      if (sel.alias) total += 1;
      if (sel.selectionSet) total += recur(sel.selectionSet);
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      total += recur(sel.selectionSet);
    } else {
      total += viaFragment(sel.name.value, getFragment, memo, recur);
    }
  }
  return total;
}

type Measure = (set: SelectionSetNode, getFragment: FragmentLookup, memo: Map<string, number>) => number;

/** A rule that measures each operation once with one walk and skips graphql's own traversal below it. */
function operationRule(measure: Measure, onValue: (value: number) => GraphQLError | undefined): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const memo = new Map<string, number>(); // fragment values, shared by the document's operations
    const getFragment: FragmentLookup = (name) => context.getFragment(name);
    return {
      OperationDefinition(node) {
        const error = onValue(measure(node.selectionSet, getFragment, memo));
        if (error) context.reportError(new GraphQLError(error.message, { nodes: node, extensions: error.extensions }));
        return false;
      },
      FragmentDefinition: () => false,
    };
  };
}

/** Refuses (MAX_DEPTH) an operation nested deeper than maxDepth; the root field is level 1. */
export function maxDepthRule(maxDepth: number): ValidationRule {
  return operationRule(selectionDepth, (depth) =>
    depth > maxDepth
      ? new GraphQLError(`Query depth ${depth} exceeds the maximum of ${maxDepth}`, { extensions: { code: 'MAX_DEPTH' satisfies WireCode } })
      : undefined,
  );
}

/** Refuses (MAX_COMPLEXITY) an operation with more than maxAliases aliased fields, spreads included. */
export function maxAliasesRule(maxAliases: number): ValidationRule {
  return operationRule(aliasCount, (count) => (count > maxAliases ? tooComplex() : undefined));
}

/** Fragments by name; build once per document and pass to computeComplexity to save the loop. */
export function collectFragments(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) {
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  }
  return fragments;
}

interface CostContext {
  schema: GraphQLSchema;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | null | undefined;
  memo: Map<string, number> | undefined; // created on the first fragment spread
}

function argNamed(args: readonly ArgumentNode[] | undefined, name: string): ArgumentNode | undefined {
  if (args) for (const arg of args) if (arg.name.value === name) return arg;
  return undefined;
}

/** A literal's value, or a variable's (given, else its declared default); undefined if unknown. */
function valueOf(ctx: CostContext, node: ValueNode): unknown {
  switch (node.kind) {
    case Kind.INT: case Kind.FLOAT: return Number(node.value);
    case Kind.BOOLEAN: return node.value;
    case Kind.VARIABLE: {
      const name = node.name.value;
      const vars = ctx.variables;
      if (vars && Object.hasOwn(vars, name) && vars[name] !== undefined) return vars[name];
      const defs = ctx.operation.variableDefinitions;
      if (defs) for (const def of defs) {
        if (def.variable.name.value === name) return def.defaultValue ? valueOf(ctx, def.defaultValue) : undefined;
      }
      return undefined;
    }
    default: return undefined; // null, or a value no Int / Boolean argument takes
  }
}

/** True when @skip(if: true) or @include(if: false); an unknown condition counts as included. */
function isSkipped(ctx: CostContext, directives: readonly DirectiveNode[]): boolean {
  for (const directive of directives) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    const arg = argNamed(directive.arguments, 'if');
    if (!arg) continue;
    const value = valueOf(ctx, arg.value);
    if (value === (name === 'skip')) return true;
  }
  return false;
}

/**
 * The list multiplier: the `limit` argument, else its schema default, clamped to 0..100
 * (an out-of-range limit is a field error later, and never yields more than 100 objects).
 * A limit argument with neither a usable value nor a default is taken at the worst, 100.
 */
function limitOf(ctx: CostContext, field: FieldNode, def: GraphQLField<unknown, unknown>): number {
  let argDef: GraphQLArgument | undefined;
  for (const arg of def.args) if (arg.name === 'limit') argDef = arg;
  if (!argDef) return 1;
  const node = argNamed(field.arguments, 'limit');
  let value = node ? valueOf(ctx, node.value) : undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) value = argDef.defaultValue;
  if (typeof value !== 'number' || !Number.isFinite(value)) return MAX_LIMIT;
  return Math.min(MAX_LIMIT, Math.max(0, Math.trunc(value)));
}

function fieldCost(ctx: CostContext, field: FieldNode, parent: GraphQLCompositeType): number {
  // `__typename` is a scalar, `__schema` / `__type` are introspection: all cost 0.
  if (!field.selectionSet || field.name.value.startsWith('__')) return 0;
  if (!isObjectType(parent) && !isInterfaceType(parent)) return 0;
  const def = parent.getFields()[field.name.value];
  if (!def) return 0; // unknown field: validation reports it, we only stay safe
  const type = getNamedType(def.type);
  if (!isCompositeType(type)) return 0;
  const multiplier = isListType(getNullableType(def.type)) ? limitOf(ctx, field, def) : 1;
  // Skipping the subtree at 0 also avoids 0 × Infinity = NaN, which would pass any ceiling.
  return multiplier === 0 ? 0 : multiplier * (1 + selectionCost(ctx, field.selectionSet, type));
}

function fragmentCost(ctx: CostContext, name: string): number {
  const memo = (ctx.memo ??= new Map<string, number>());
  const known = memo.get(name);
  if (known !== undefined) return known;
  const fragment = ctx.fragments.get(name);
  const type = fragment && ctx.schema.getType(fragment.typeCondition.name.value);
  if (!fragment || !type || !isCompositeType(type)) return 0;
  memo.set(name, 0); // cycle placeholder, as in viaFragment
  const cost = selectionCost(ctx, fragment.selectionSet, type);
  memo.set(name, cost);
  return cost;
}

function selectionCost(ctx: CostContext, set: SelectionSetNode, parent: GraphQLCompositeType): number {
  let total = 0;
  for (const sel of set.selections) {
    if (sel.directives && sel.directives.length > 0 && isSkipped(ctx, sel.directives)) continue;
    if (sel.kind === Kind.FIELD) {
      total += fieldCost(ctx, sel, parent);
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      const type = sel.typeCondition ? ctx.schema.getType(sel.typeCondition.name.value) : parent;
      if (type && isCompositeType(type)) total += selectionCost(ctx, sel.selectionSet, type);
    } else {
      total += fragmentCost(ctx, sel.name.value);
    }
  }
  return total;
}

/**
 * Complexity (docs/limits.md): the most objects the chosen operation can return. 0 when there is
 * no such operation (execution reports that). Pass `fragments` from collectFragments to
 * reuse it across calls on the same document.
 */
export function computeComplexity(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  variables: Record<string, unknown> | null | undefined,
  fragments?: ReadonlyMap<string, FragmentDefinitionNode>,
): number {
  const operation = getOperationAST(document, operationName);
  if (!operation) return 0;
  const root = schema.getRootType(operation.operation);
  if (!root) return 0;
  const ctx: CostContext = { schema, fragments: fragments ?? collectFragments(document), operation, variables, memo: undefined };
  return selectionCost(ctx, operation.selectionSet, root);
}

function usesVariables(set: SelectionSetNode, fragments: ReadonlyMap<string, FragmentDefinitionNode>, seen: Set<string>): boolean {
  for (const sel of set.selections) {
    if (sel.directives) for (const { name, arguments: args } of sel.directives) {
      const isCondition = name.value === 'skip' || name.value === 'include';
      if (isCondition && argNamed(args, 'if')?.value.kind === Kind.VARIABLE) return true;
    }
    if (sel.kind === Kind.FIELD) {
      if (isIntrospection(sel.name.value)) continue; // costs 0 whatever its arguments
      if (argNamed(sel.arguments, 'limit')?.value.kind === Kind.VARIABLE) return true;
      if (sel.selectionSet && usesVariables(sel.selectionSet, fragments, seen)) return true;
    } else if (sel.kind === Kind.INLINE_FRAGMENT) {
      if (usesVariables(sel.selectionSet, fragments, seen)) return true;
    } else if (!seen.has(sel.name.value)) {
      seen.add(sel.name.value);
      const fragment = fragments.get(sel.name.value);
      if (fragment && usesVariables(fragment.selectionSet, fragments, seen)) return true;
    }
  }
  return false;
}

/**
 * True when the operation's cost depends on variable values (a `limit` or an @include /
 * @skip condition given by a variable), so the caller may cache the cost otherwise.
 */
export function complexityDependsOnVariables(document: DocumentNode, operationName?: string | null): boolean {
  const operation = getOperationAST(document, operationName);
  if (!operation) return false;
  return usesVariables(operation.selectionSet, collectFragments(document), new Set());
}
