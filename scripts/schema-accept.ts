import { copyFileSync } from 'node:fs';
import { SCHEMA_FILE, SNAPSHOT_FILE, breakingChanges } from './schema-check.js';

// `npm run schema:accept`: records the current schema as the released one, unless it
// breaks the previous release — then it lists why and changes nothing.
const breaking = await breakingChanges();
if (breaking.length > 0) {
  process.stderr.write(`Refused: the schema has breaking changes:\n${breaking.map((c) => `  - ${c.message}`).join('\n')}\n`);
  process.exit(1);
}
copyFileSync(SCHEMA_FILE, SNAPSHOT_FILE);
process.stdout.write(`${SNAPSHOT_FILE} updated\n`);
