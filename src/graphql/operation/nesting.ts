import { BadRequest } from './errors.js';

/**
 * Input nested deeper than MAX_INPUT_NESTING levels is refused with 400 `BAD_REQUEST`
 * (docs/limits.md): JSON.parse copes with any depth, but everything recursive after it
 * (variable coercion, cache keys, serialisers) would overflow the stack.
 */
export const MAX_INPUT_NESTING = 100;

/** Throws when a parsed JSON value nests objects or arrays deeper than the limit; iterative, so it cannot overflow. */
export function assertNesting(value: unknown, what: string): void {
  if (typeof value !== 'object' || value === null) return;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > MAX_INPUT_NESTING) throw tooDeep(what);
    for (const child of Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
}

export function tooDeep(what: string): BadRequest {
  return new BadRequest(`${what} is nested deeper than ${MAX_INPUT_NESTING} levels`);
}
