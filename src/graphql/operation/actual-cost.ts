import { Kind, getOperationAST, type SelectionSetNode } from 'graphql';
import { collectFragments } from './limits.js';
import type { PreparedOperation } from './pipeline.js';

/**
 * An operation's actual cost (docs/limits.md, "Cost"): the objects its result holds,
 * counted as the complexity counts the most it could hold (./limits.ts) — each object
 * of an object field or in a list of objects 1, scalars and nulls 0, introspection
 * (`__schema`, `__type`) 0. So a result whose lists came back shorter than their
 * `limit` costs less than was asked, never more.
 */
export function actualCost(operation: PreparedOperation, data: unknown): number {
  if (data === null || typeof data !== 'object') return 0;
  const skipped = introspectionKeys(operation);
  let total = 0;
  for (const key in data) {
    if (skipped?.has(key)) continue;
    total += objectsIn((data as Record<string, unknown>)[key]);
  }
  return total;
}

function objectsIn(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) {
    let total = 0;
    for (const item of value) total += objectsIn(item);
    return total;
  }
  let total = 1;
  for (const key in value) total += objectsIn((value as Record<string, unknown>)[key]);
  return total;
}

const introspection = new WeakMap<PreparedOperation, ReadonlySet<string> | undefined>();

/** The response keys of the root's introspection fields (only a query root has them); usually none. */
function introspectionKeys(operation: PreparedOperation): ReadonlySet<string> | undefined {
  if (introspection.has(operation)) return introspection.get(operation);
  const ast = getOperationAST(operation.document, operation.operationName);
  const keys = new Set<string>();
  if (ast) {
    const fragments = collectFragments(operation.document);
    const seen = new Set<string>();
    const visit = (set: SelectionSetNode): void => {
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          if (sel.name.value === '__schema' || sel.name.value === '__type') keys.add(sel.alias?.value ?? sel.name.value);
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          visit(sel.selectionSet);
        } else if (!seen.has(sel.name.value)) {
          seen.add(sel.name.value);
          const fragment = fragments.get(sel.name.value);
          if (fragment) visit(fragment.selectionSet);
        }
      }
    };
    visit(ast.selectionSet);
  }
  const result = keys.size > 0 ? keys : undefined;
  introspection.set(operation, result);
  return result;
}
