import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * scripts/build-when-changed.mjs: the portal's and the receiver's builds run again only when an
 * input changed. Driven on a scratch package whose "build" counts its runs into dist/.
 */
const SCRIPT = fileURLToPath(new URL('../../../../scripts/build-when-changed.mjs', import.meta.url));
// The build: appends a line to dist/runs (creating dist/), or fails when FAIL_BUILD is set.
const BUILD = [
  process.execPath,
  '-e',
  "const fs=require('fs'); if (process.env.FAIL_BUILD) process.exit(3); fs.mkdirSync('dist',{recursive:true}); fs.appendFileSync('dist/runs','x\\n')",
];

let pkg: string;
let stamps: string;

beforeEach(() => {
  pkg = mkdtempSync(join(tmpdir(), 'payhooks-build-'));
  stamps = join(pkg, 'stamps');
  mkdirSync(join(pkg, 'src'));
  writeFileSync(join(pkg, 'src', 'a.ts'), 'export const a = 1;\n');
  writeFileSync(join(pkg, 'config.ts'), 'export default {};\n');
});
afterEach(() => rmSync(pkg, { recursive: true, force: true }));

function build(env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [SCRIPT, 'src', 'config.ts', '--', ...BUILD], {
    cwd: pkg,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', PAYHOOKS_BUILD_STAMPS: stamps, ...env },
  });
}
const runs = () =>
  readFileSync(join(pkg, 'dist', 'runs'), 'utf8')
    .split('\n')
    .filter(Boolean).length;

describe('scripts/build-when-changed.mjs', () => {
  it('builds the first time, then not again while no input changed', () => {
    expect(build().status).toBe(0);
    expect(runs()).toBe(1);
    const again = build();
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('up to date');
    expect(runs()).toBe(1);
  });

  it('builds again when a file changes, a file is added inside a folder, or a file input changes', () => {
    build();
    writeFileSync(join(pkg, 'src', 'a.ts'), 'export const a = 2;\n');
    build();
    expect(runs()).toBe(2);
    writeFileSync(join(pkg, 'src', 'b.ts'), 'export const b = 1;\n');
    build();
    expect(runs()).toBe(3);
    writeFileSync(join(pkg, 'config.ts'), 'export default { minify: true };\n');
    build();
    expect(runs()).toBe(4);
    build();
    expect(runs()).toBe(4);
  });

  it('builds again when dist/ is gone, and always with PAYHOOKS_BUILD_ALWAYS=1', () => {
    build();
    rmSync(join(pkg, 'dist'), { recursive: true });
    build();
    expect(runs()).toBe(1);
    build({ PAYHOOKS_BUILD_ALWAYS: '1' });
    expect(runs()).toBe(2);
  });

  it('a failed build fails with its status and is not remembered: the next run builds', () => {
    build();
    writeFileSync(join(pkg, 'src', 'a.ts'), 'export const a = 3;\n');
    expect(build({ FAIL_BUILD: '1' }).status).toBe(3);
    expect(runs()).toBe(1);
    expect(build().status).toBe(0);
    expect(runs()).toBe(2);
  });

  it('refuses a command line without inputs or without a command', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '--', 'true'], { cwd: pkg, encoding: 'utf8' });
    expect(r.status).toBe(64);
    expect(r.stderr).toContain('usage');
  });
});
