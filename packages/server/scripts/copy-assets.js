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
// Clean first: a migration renamed or removed in src must not linger in dist.
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const file of readdirSync(src)) if (file.endsWith('.sql')) cpSync(join(src, file), join(out, file));

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
