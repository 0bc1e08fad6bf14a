import type { Caller } from '../domain/caller.js';
import { NO_READS, type Reads } from '../cache/reads.js';
import type { Services } from '../domain/services.js';
import { createLoaders, type Loaders } from './loaders.js';

/**
 * Built fresh for every operation: nothing request-scoped lives in module state.
 * `reads` records what a cacheable query depended on (src/cache/reads.ts); resolvers
 * and loaders hand it to every service read.
 */
export type GraphQLContext = {
  readonly caller: Caller;
  readonly services: Services;
  readonly loaders: Loaders;
  readonly reads: Reads;
};

export function createContext(services: Services, caller: Caller, reads: Reads = NO_READS): GraphQLContext {
  return { caller, services, reads, loaders: createLoaders(services, caller, reads) };
}
