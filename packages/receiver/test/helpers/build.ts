import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
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
  const inputs = [
    join(PACKAGE_DIR, 'src'),
    join(PACKAGE_DIR, 'package.json'),
    join(PACKAGE_DIR, 'tsup.config.ts'),
    join(PACKAGE_DIR, '../contract/src'),
  ];
  return Math.max(...inputs.map(newest)) > oldestOutput;
}

function lockHolderIsGone(): boolean {
  try {
    const pid = Number(readFileSync(join(LOCK, 'pid'), 'utf8'));
    if (!pid) return Date.now() - statSync(LOCK).mtimeMs > 5_000; // pid not written yet, or never
    process.kill(pid, 0);
    return false;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return true;
    if (code === 'ENOENT') {
      try {
        return Date.now() - statSync(LOCK).mtimeMs > 5_000;
      } catch {
        return false; // the lock itself is gone: try again
      }
    }
    return false;
  }
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
      writeFileSync(join(LOCK, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (lockHolderIsGone()) rmSync(LOCK, { recursive: true, force: true }); // left by a killed run
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
