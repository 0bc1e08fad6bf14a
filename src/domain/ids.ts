import { randomUUID } from 'node:crypto';

/**
 * Record ids are random UUIDs: opaque and non-sequential, so an id reveals neither how
 * many records exist nor which one comes next (docs/schema.md).
 */
export function newId(): string {
  return randomUUID();
}

/** The current time as the ISO 8601 UTC text every table stores. */
export function nowIso(): string {
  return new Date().toISOString();
}
