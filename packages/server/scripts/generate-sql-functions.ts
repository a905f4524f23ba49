// Writes the SQL functions generated from the TypeScript path's statements (today
// db/migrations/R_publish_event.sql, from events/publish-function.ts): `npm run generate`.
// test/unit/publish-function.test.ts fails when a committed file differs from what is generated.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { publishFunctionSql } from '../src/events/publish-function.ts';

export const PUBLISH_FUNCTION_FILE = fileURLToPath(new URL('../src/db/migrations/R_publish_event.sql', import.meta.url));

writeFileSync(PUBLISH_FUNCTION_FILE, publishFunctionSql());
console.log(`wrote ${PUBLISH_FUNCTION_FILE}`);
