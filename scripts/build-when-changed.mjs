#!/usr/bin/env node
// node ../../scripts/build-when-changed.mjs <input>... -- <command> [args...]
//
// Runs a package's build command, from its folder, unless every input (files, or folders read
// whole) is byte for byte what it was at the last build that succeeded. vite and tsup have no
// incremental mode: each `npm run build` (`npm install`'s prepare, then again in `npm test`)
// rebuilt the portal and the receiver from scratch, 8 s of a 2-core machine for nothing when no
// source had changed. The digest of the inputs, the command and the lockfile is kept in
// node_modules/.cache/payhooks-build/ (not in dist/, which is published), written only after the
// command succeeded; a missing or different digest, or an empty or missing dist/, builds.
// PAYHOOKS_BUILD_ALWAYS=1 always builds; PAYHOOKS_BUILD_STAMPS moves the digests (its test).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';

const args = process.argv.slice(2);
const split = args.indexOf('--');
if (split < 1 || split === args.length - 1) {
  process.stderr.write('usage: build-when-changed.mjs <input>... -- <command> [args...]\n');
  process.exit(64);
}
const inputs = args.slice(0, split);
const command = args.slice(split + 1);
const root = join(import.meta.dirname, '..');
const stamps = process.env.PAYHOOKS_BUILD_STAMPS ?? join(root, 'node_modules', '.cache', 'payhooks-build');
const stamp = join(stamps, `${basename(process.cwd())}.digest`);

function* files(path) {
  if (!existsSync(path)) return;
  if (!statSync(path).isDirectory()) {
    yield path;
    return;
  }
  for (const entry of readdirSync(path, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.name === 'node_modules' || entry.name === 'dist') continue;
    yield* files(join(path, entry.name));
  }
}

const hash = createHash('sha256');
hash.update(`${command.join('\0')}\n`);
for (const input of [...inputs, join(root, 'package-lock.json')]) {
  for (const file of files(input)) {
    hash.update(`${relative(root, resolve(file))}\n`);
    hash.update(readFileSync(file));
  }
}
const digest = hash.digest('hex');

const built = existsSync('dist') && readdirSync('dist').length > 0;
if (process.env.PAYHOOKS_BUILD_ALWAYS !== '1' && built && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest) {
  process.stdout.write(`${command.join(' ')}: up to date (no input changed since the last build)\n`);
  process.exit(0);
}
const run = spawnSync(command[0], command.slice(1), { stdio: 'inherit', shell: process.platform === 'win32' });
if (run.status !== 0) process.exit(run.status ?? 1);
mkdirSync(stamps, { recursive: true });
writeFileSync(stamp, `${digest}\n`);
