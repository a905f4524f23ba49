#!/usr/bin/env node
// Runs the compiled CLI (dist/, built by `npm run build`, on `npm install` in the repository
// and before `npm pack`). In development, `npm run payhooks -- <args>` runs the sources with tsx.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/cli/run.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('payhooks: the CLI is not built (no dist/cli/run.js). Run `npm run build` in the repository, then try again.\n');
  process.exit(1);
}
await import(entry.href);
