// tsc copies no non-TypeScript files; the runtime reads these next to their modules:
// the SDL, the GraphiQL page's own browser files (src/graphiql/assets.ts), and the
// bcrypt worker module (src/auth/passwords.ts), the SQLite checkpoint worker (src/db/checkpoints.ts).
import { copyFileSync, cpSync, mkdirSync } from 'node:fs';

mkdirSync('dist/graphql', { recursive: true });
copyFileSync('src/graphql/schema.graphql', 'dist/graphql/schema.graphql');
cpSync('src/graphiql/client', 'dist/graphiql/client', { recursive: true });
mkdirSync('dist/auth', { recursive: true });
copyFileSync('src/auth/hash-worker.mjs', 'dist/auth/hash-worker.mjs');
mkdirSync('dist/db', { recursive: true });
copyFileSync('src/db/checkpoint-worker.mjs', 'dist/db/checkpoint-worker.mjs');
