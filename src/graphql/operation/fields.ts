import { Kind, getNamedType, getOperationAST, isCompositeType, isInterfaceType, isObjectType } from 'graphql';
import type { DocumentNode, FragmentDefinitionNode, GraphQLCompositeType, GraphQLSchema, SelectionSetNode } from 'graphql';
import { collectFragments } from './limits.js';

/**
 * At most this many fields once fragments are expanded (docs/limits.md, "Tokens and aliases").
 * graphql-jit generates ~1 KB of code per expanded field, ~0.2 ms of compiling on two
 * cores; a document of 1.6 KB whose fragments spread each other under 30 aliases came to
 * 1,965 fields (0.4 s to compile, 10 MB held) at a cost of 0 (`limit: 0`).
 */
export const MAX_EXPANDED_FIELDS = 500;

/**
 * The operation's fields with every fragment expanded, counted once each whatever their
 * `limit`, `@skip` or `@include` (`__typename` aside). Compiling an operation costs work in
 * proportion to this, even where its cost is 0 (`limit: 0`, a skipped branch), so it is
 * checked before compiling. Fragments are memoised, as in the cost.
 */
export function expandedFields(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName: string | null | undefined,
  fragments?: ReadonlyMap<string, FragmentDefinitionNode>,
): number {
  const operation = getOperationAST(document, operationName);
  const root = operation && schema.getRootType(operation.operation);
  if (!operation || !root) return 0;
  const known = fragments ?? collectFragments(document);
  const memo = new Map<string, number>();
  const sizeOf = (set: SelectionSetNode, parent: GraphQLCompositeType): number => {
    let total = 0;
    for (const sel of set.selections) {
      if (sel.kind === Kind.FIELD) {
        if (sel.name.value === '__typename') continue;
        total += 1;
        if (!sel.selectionSet || !(isObjectType(parent) || isInterfaceType(parent))) continue;
        const def = parent.getFields()[sel.name.value];
        const type = def && getNamedType(def.type);
        if (type && isCompositeType(type)) total += sizeOf(sel.selectionSet, type);
      } else if (sel.kind === Kind.INLINE_FRAGMENT) {
        const type = sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent;
        if (type && isCompositeType(type)) total += sizeOf(sel.selectionSet, type);
      } else {
        const name = sel.name.value;
        let size = memo.get(name);
        if (size === undefined) {
          memo.set(name, 0); // a cycle counts 0 (validation refuses cycles anyway)
          const fragment = known.get(name);
          const type = fragment && schema.getType(fragment.typeCondition.name.value);
          size = fragment && type && isCompositeType(type) ? sizeOf(fragment.selectionSet, type) : 0;
          memo.set(name, size);
        }
        total += size;
      }
      // Past any ceiling already: no need to count further (sizes may grow exponentially).
      if (total > Number.MAX_SAFE_INTEGER / 4) return total;
    }
    return total;
  };
  return sizeOf(operation.selectionSet, root);
}
