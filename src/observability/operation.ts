import { Kind, type DocumentNode } from 'graphql';

/**
 * The operation a request ran, as logs, metrics and spans name it. A prepared operation
 * carries the name the client asked for, which is absent when the document holds one
 * operation: then its own name (`query WhoAmI { … }`) is the one to show.
 */
export interface ObservedOperation {
  readonly document: DocumentNode;
  readonly operationName: string | undefined;
  readonly operationType: string;
}

export function operationNameOf(operation: ObservedOperation): string | undefined {
  if (operation.operationName !== undefined) return operation.operationName;
  for (const definition of operation.document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION) return definition.name?.value;
  }
  return undefined;
}
