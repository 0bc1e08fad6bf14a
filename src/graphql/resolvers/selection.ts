import { Kind, type FieldNode, type FragmentDefinitionNode, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql';
import type { PostColumns } from '../../domain/types.js';

/**
 * Whether a field's selection asks for any of `names` among its own subfields (through
 * inline fragments and fragment spreads), so that a list reads only the columns its
 * answer shows (docs/decisions.md, "Lists read what the query asks"). Directives are
 * ignored: a field under `@include(if: false)` still counts, as reading a column too many
 * is safe and one too few is not. Remembered per field-node list, which graphql-jit hands
 * every execution of a compiled operation unchanged.
 */
export function selectionAsks(names: readonly string[]): (info: GraphQLResolveInfo) => boolean {
  const wanted = new Set(names);
  const known = new WeakMap<readonly FieldNode[], boolean>();
  return (info) => {
    let asks = known.get(info.fieldNodes);
    if (asks === undefined) {
      const seen = new Set<string>();
      asks = info.fieldNodes.some((node) => node.selectionSet !== undefined && asksIn(node.selectionSet, wanted, info.fragments, seen));
      known.set(info.fieldNodes, asks);
    }
    return asks;
  };
}

function asksIn(set: SelectionSetNode, wanted: ReadonlySet<string>, fragments: Record<string, FragmentDefinitionNode>, seen: Set<string>): boolean {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      if (wanted.has(selection.name.value)) return true;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      if (asksIn(selection.selectionSet, wanted, fragments, seen)) return true;
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value);
      const fragment = fragments[selection.name.value];
      // A fragment this execution does not know (never, once validated): assume it asks.
      if (fragment === undefined || asksIn(fragment.selectionSet, wanted, fragments, seen)) return true;
    }
  }
  return false;
}

const asksForBody = selectionAsks(['content', 'tags']);

/** What a list of posts reads: listings (src/domain/types.ts) unless the selection asks for content or tags. */
export function postColumns(info: GraphQLResolveInfo): PostColumns {
  return asksForBody(info) ? 'all' : 'listing';
}
