#!/usr/bin/env node
// Copies what the compiled server reads from disk at run time next to it in dist/: the SQL
// migrations (always) and, with --portal, the built Merchant Portal (for the published package,
// which can't reach packages/portal-ui). tsc only emits JavaScript, so this runs after it.
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src/db/migrations');
const out = join(root, 'dist/db/migrations');
// Copy over, then drop what src no longer has (a migration renamed or removed): never an empty
// directory in between, since a `payhooks` process started meanwhile (tests) reads it.
mkdirSync(out, { recursive: true });
const sql = readdirSync(src).filter((file) => file.endsWith('.sql'));
for (const file of sql) cpSync(join(src, file), join(out, file));
for (const file of readdirSync(out)) if (!sql.includes(file)) rmSync(join(out, file), { force: true });

if (process.argv.includes('--portal')) {
  const portal = join(root, '../portal-ui/dist');
  if (!existsSync(join(portal, 'index.html'))) {
    console.error('payhooks build: packages/portal-ui/dist/index.html is missing; run `npm run build -w packages/portal-ui` first.');
    process.exit(1);
  }
  const target = join(root, 'dist/portal-ui');
  rmSync(target, { recursive: true, force: true });
  cpSync(portal, target, { recursive: true });
}
