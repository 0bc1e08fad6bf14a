import type { UserRow } from '../../src/db/schema.js';

/** `count` plain users `u-000`, `u-001`, … named `User <i>`, created at `at(i)`, for tests that insert rows directly. */
export function userRows(count: number, at: (i: number) => string): UserRow[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `u-${String(i).padStart(3, '0')}`,
    name: `User ${i}`,
    email: `user${i}@example.test`,
    age: null,
    avatar: null,
    role: 'user',
    password_hash: null,
    created_at: at(i),
  }));
}
