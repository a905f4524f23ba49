import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const PACKAGE_DIR = fileURLToPath(new URL('../..', import.meta.url));
export const DIST_DIR = join(PACKAGE_DIR, 'dist');
const LOCK = join(PACKAGE_DIR, '.build-lock');
const OUTPUTS = ['index.js', 'index.cjs', 'index.d.ts', 'index.d.cts', 'fetch.js', 'fetch.cjs', 'fetch.d.ts', 'fetch.d.cts'];
const run = promisify(execFile);

function newest(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  return Math.max(0, ...readdirSync(path).map((f) => newest(join(path, f))));
}

function isStale(): boolean {
  let oldestOutput = Infinity;
  for (const f of OUTPUTS) {
    try {
      oldestOutput = Math.min(oldestOutput, statSync(join(DIST_DIR, f)).mtimeMs);
    } catch {
      return true;
    }
  }
  const inputs = [join(PACKAGE_DIR, 'src'), join(PACKAGE_DIR, 'package.json'), join(PACKAGE_DIR, 'tsup.config.ts'), join(PACKAGE_DIR, '../contract/src')];
  return Math.max(...inputs.map(newest)) > oldestOutput;
}

/**
 * Builds dist with `npm run build` when it is missing or older than its sources. Test files run in
 * parallel workers, so a lock directory makes one of them build while the others wait.
 */
export async function ensureDist(): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > 90_000) rmSync(LOCK, { recursive: true, force: true }); // left by a killed run
      } catch {
        // removed meanwhile
      }
      if (Date.now() > deadline) throw new Error('timed out waiting for the receiver build lock');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  try {
    if (isStale()) await run('npm', ['run', 'build', '--silent'], { cwd: PACKAGE_DIR, timeout: 120_000 });
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}
