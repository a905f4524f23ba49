#!/usr/bin/env node
// Copies what the compiled server reads from disk at run time next to it in dist/: the SQL
// migrations (always) and, with --portal, the built Merchant Portal (for the published package,
// which can't reach packages/portal-ui). tsc only emits JavaScript, so this runs after it.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
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
  // Two packings at once (the package tests) must never see the directory missing or half
  // written: unchanged, it is left alone; changed, a full copy is swapped in by renames.
  if (!sameTree(portal, target)) {
    const fresh = `${target}.new-${process.pid}`;
    const old = `${target}.old-${process.pid}`;
    cpSync(portal, fresh, { recursive: true });
    if (existsSync(target)) renameSync(target, old);
    renameSync(fresh, target);
    rmSync(old, { recursive: true, force: true });
  }
}

/** Whether `b` holds the same files with the same bytes as `a`. */
function sameTree(a, b) {
  if (!existsSync(b)) return false;
  const files = (dir) =>
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath ?? e.path, e.name).slice(dir.length))
      .sort();
  const left = files(a);
  const right = files(b);
  return left.length === right.length && left.every((f, i) => f === right[i] && readFileSync(join(a, f)).equals(readFileSync(join(b, f))));
}
