import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * Tests that spawn `payhooks` run the compiled CLI (bin/payhooks.js imports dist/), as users do.
 * This brings dist/ up to date with src/ before any test starts: `tsc -b` is incremental (a
 * no-op when nothing changed), and the migrations are copied next to the compiled code.
 */
export default function setup(): void {
  // Every project inherits this setup; one build per run is enough.
  if (process.env.PAYHOOKS_TEST_BUILT) return;
  process.env.PAYHOOKS_TEST_BUILT = '1';
  const server = fileURLToPath(new URL('..', import.meta.url));
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: server, stdio: 'inherit' });
  execFileSync(process.execPath, ['scripts/copy-assets.js'], { cwd: server, stdio: 'inherit' });
}
