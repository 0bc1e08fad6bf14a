import { readFileSync } from 'node:fs';
import { CriticalityLevel, diff, type Change } from '@graphql-inspector/core';
import { buildSchema } from 'graphql';

/**
 * Compares the schema (src/graphql/schema.graphql) with the last accepted one
 * (schema.snapshot.graphql). Removing or retyping a field, or adding a required
 * argument, breaks existing clients: deprecate instead.
 */
export const SCHEMA_FILE = 'src/graphql/schema.graphql';
export const SNAPSHOT_FILE = 'schema.snapshot.graphql';

export async function breakingChanges(
  current = readFileSync(SCHEMA_FILE, 'utf8'),
  snapshot = readFileSync(SNAPSHOT_FILE, 'utf8'),
): Promise<Change[]> {
  const changes = await diff(buildSchema(snapshot), buildSchema(current));
  return changes.filter((c) => c.criticality.level === CriticalityLevel.Breaking);
}
