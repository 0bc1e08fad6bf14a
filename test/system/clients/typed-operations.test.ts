import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../../helpers/server.js';
import { ROOT, run, scratchDir, type Run } from '../ops/helpers.js';
import { live, snippet } from './readme.js';

/*
 * README "Typed operations in TypeScript", as a front-end developer follows it: a project
 * with Inkwell's released schema (schema.snapshot.graphql, copied as inkwell.graphql), the
 * README's codegen.ts and its typed operation (src/latest-posts.ts), and a Vite-like
 * tsconfig. GraphQL Code Generator's client preset generates src/gql/, tsc compiles it,
 * and the file runs against a live service with the demo data. The mistakes the README
 * says are caught are caught: an unselected field and a wrongly typed variable by tsc, a
 * field the schema lacks by graphql-codegen.
 */
const require = createRequire(import.meta.url);
const CODEGEN = join(require.resolve('@graphql-codegen/cli/package.json'), '..', 'cjs', 'bin.js');
// TypeScript 7 exports no `bin/tsc` subpath: the file beside its package.json.
const TSC = join(require.resolve('typescript/package.json'), '..', 'bin', 'tsc');
const TSX = pathToFileURL(require.resolve('tsx')).href;

/** A front-end project's compiler settings, as Vite's TypeScript templates write them. */
const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    lib: ['ES2022', 'DOM'],
    module: 'ESNext',
    moduleResolution: 'bundler',
    strict: true,
    noEmit: true,
    isolatedModules: true,
    skipLibCheck: true,
    types: [],
  },
  include: ['src'],
};

let server: TestServer;
let dir: string;
let operation: string;
const operationFile = () => join(dir, 'src', 'latest-posts.ts');

/** A developer's shell: not vitest's environment (graphql-codegen prints nothing under NODE_ENV=test). */
const SHELL = { PATH: process.env.PATH, HOME: process.env.HOME };
const node = (args: string[]): Promise<Run> => run(process.execPath, args, { cwd: dir, env: SHELL });
const codegen = () => node([CODEGEN, '--config', 'codegen.ts']);
const tsc = () => node([TSC, '-p', 'tsconfig.json']);

/** Runs `check` with the operation file changed by `edit`, then puts the README's back. */
async function withEdit(edit: (code: string) => string, check: () => Promise<void>): Promise<void> {
  const changed = edit(operation);
  expect(changed).not.toBe(operation);
  writeFileSync(operationFile(), changed);
  try {
    await check();
  } finally {
    writeFileSync(operationFile(), operation);
  }
}

/** The README file with one mistake each, as copies beside it: tsc must refuse each. */
const MISTAKES: Record<string, (code: string) => string> = {
  'unselected-field.ts': (code) => code.replace('${post.likes} likes', '${post.likes} likes, ${post.content}'),
  'wrong-variable.ts': (code) => code.replace('{ limit: 3 }', "{ limit: '3' }"),
};

interface TypeCheck {
  status: number | null;
  /** tsc's error lines (`file(line,col): error TS…`). */
  errors: string[];
  /** Any other line that is not the continuation of an error. */
  other: string[];
}

let typeChecked: Promise<TypeCheck> | undefined;
/**
 * One tsc run over the README file and the copies with a mistake (a run is seconds of
 * CPU): the README file must have no error, each copy exactly its own.
 */
function typeCheck(): Promise<TypeCheck> {
  typeChecked ??= (async () => {
    for (const [file, edit] of Object.entries(MISTAKES)) {
      const changed = edit(operation);
      expect(changed).not.toBe(operation);
      writeFileSync(join(dir, 'src', file), changed);
    }
    try {
      const compiled = await tsc();
      const lines = `${compiled.stdout}${compiled.stderr}`.split('\n').filter((line) => line.trim() !== '' && !/^\s/.test(line));
      const errors = lines.filter((line) => /^\S+\(\d+,\d+\): error TS\d+/.test(line));
      return { status: compiled.status, errors, other: lines.filter((line) => !errors.includes(line)) };
    } finally {
      for (const file of Object.keys(MISTAKES)) rmSync(join(dir, 'src', file), { force: true });
    }
  })();
  return typeChecked;
}

beforeAll(async () => {
  server = await startServer({ SEED_DEMO_DATA: 'auto' });
  // Inside the checkout, so that the project's imports resolve to its node_modules.
  dir = scratchDir('typed-operations');
  mkdirSync(join(dir, 'src'));
  copyFileSync(join(ROOT, 'schema.snapshot.graphql'), join(dir, 'inkwell.graphql'));
  writeFileSync(join(dir, 'codegen.ts'), snippet('codegen-config').code);
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
  operation = live(snippet('typed-query').code, server.url);
  writeFileSync(operationFile(), operation);
});
afterAll(async () => {
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the client preset on the released schema', { timeout: 120_000 }, () => {
  it('graphql-codegen writes src/gql/, with the operation typed', async () => {
    const generated = await codegen();
    expect(generated.status, generated.stdout + generated.stderr).toBe(0);
    const types = readFileSync(join(dir, 'src', 'gql', 'graphql.ts'), 'utf8');
    expect(types).toContain('export type LatestPostsQuery');
    expect(types).toContain('export type LatestPostsQueryVariables');
  });

  it('tsc compiles the README file as it stands', async () => {
    const { status, errors, other } = await typeCheck();
    expect(other).toEqual([]);
    expect(errors.filter((error) => !Object.keys(MISTAKES).some((file) => error.startsWith(`src/${file}(`)))).toEqual([]);
    expect(status).not.toBe(0); // the copies' mistakes: the run did check
  });

  it('tsc refuses reading a field the operation did not select', async () => {
    const { errors } = await typeCheck();
    expect(errors.filter((error) => error.startsWith('src/unselected-field.ts('))).toEqual([
      expect.stringMatching(/^src\/unselected-field\.ts\(\d+,\d+\): error TS2339: Property 'content' does not exist/),
    ]);
  });

  it('tsc refuses a variable of the wrong type', async () => {
    const { errors } = await typeCheck();
    expect(errors.filter((error) => error.startsWith('src/wrong-variable.ts('))).toEqual([
      expect.stringMatching(/^src\/wrong-variable\.ts\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/),
    ]);
  });

  it('graphql-codegen refuses a field the schema lacks', async () => {
    await withEdit(
      (code) => code.replace(/^(\s+)likes$/m, '$1subtitle'),
      async () => {
        const generated = await codegen();
        expect(generated.status).not.toBe(0);
        expect(generated.stdout + generated.stderr).toContain('Cannot query field "subtitle" on type "Post"');
      },
    );
    // The README's operation generates again.
    expect((await codegen()).status).toBe(0);
  });

  it('the file runs against the service and prints the newest demo posts', async () => {
    const ran = await node(['--import', TSX, operationFile()]);
    expect(ran.stderr).toBe('');
    expect(ran.stdout).toBe(
      [
        'Open the pod bay doors: a review by Dave Bowman, 1 likes',
        'Poetry in orbit by Carol Danvers, 0 likes',
        'On building bookshelves by Bob Builder, 0 likes',
        '',
      ].join('\n'),
    );
    expect(ran.status).toBe(0);
  });
});
