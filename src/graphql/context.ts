import type { Caller } from '../domain/caller.js';
import type { Services } from '../domain/services.js';
import { createLoaders, type Loaders } from './loaders.js';

/** Built fresh for every operation: nothing request-scoped lives in module state. */
export type GraphQLContext = {
  readonly caller: Caller;
  readonly services: Services;
  readonly loaders: Loaders;
};

export function createContext(services: Services, caller: Caller): GraphQLContext {
  return { caller, services, loaders: createLoaders(services, caller) };
}
