import { readFileSync } from 'node:fs';
import { generate } from '@graphql-codegen/cli';
import { describe, expect, it } from 'vitest';
import config from '../../codegen.js';
import { breakingChanges } from '../../scripts/schema-check.js';

const snapshot = readFileSync('schema.snapshot.graphql', 'utf8');
const current = readFileSync('src/graphql/schema.graphql', 'utf8');

describe('schema evolution', () => {
  it('the schema does not break the released snapshot', async () => {
    const breaking = await breakingChanges(current, snapshot);
    expect(breaking.map((c) => c.message)).toEqual([]);
  });

  it('detects a removed field as breaking', async () => {
    const changed = current.replace(/\n\s*"How many posts[^\n]*\n\s*postsCount: Int!/, "\n");
    expect(changed).not.toBe(current);
    const breaking = await breakingChanges(changed, snapshot);
    expect(breaking.map((c) => c.message).join('\n')).toMatch(/postsCount/);
  });

  it('detects a retyped field as breaking', async () => {
    const changed = current.replace('likes: Int!', 'likes: String!');
    const breaking = await breakingChanges(changed, snapshot);
    expect(breaking.map((c) => c.message).join('\n')).toMatch(/likes/);
  });

  it('detects an added required argument as breaking', async () => {
    const changed = current.replace('book(id: ID!): Book', 'book(id: ID!, edition: Int!): Book');
    const breaking = await breakingChanges(changed, snapshot);
    expect(breaking.map((c) => c.message).join('\n')).toMatch(/edition/);
  });

  it('accepts additions and deprecations', async () => {
    const changed = current
      .replace('  year: Int\n}', '  year: Int\n  isbn: String\n}')
      .replace('avatar: String', 'avatar: String @deprecated(reason: "Use a new field")');
    expect(changed).not.toBe(current);
    expect(await breakingChanges(changed, snapshot)).toEqual([]);
  });
});

describe('generated resolver types', () => {
  it('are up to date with schema.graphql (run `npm run codegen`)', async () => {
    const outputs = await generate(config, false);
    for (const output of outputs) {
      expect(readFileSync(output.filename, 'utf8'), output.filename).toBe(output.content);
    }
  }, 60_000);
});
