import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
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
  const build = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: server, encoding: 'utf8' });
  // A type error still emits JavaScript; `npm run typecheck` is where type errors fail the run.
  if (build.status !== 0)
    process.stderr.write(`tsc -b packages/server reported errors (the compiled CLI is emitted anyway):\n${build.stdout}${build.stderr}\n`);
  if (!existsSync(join(server, 'dist/cli/run.js')))
    throw new Error(`packages/server could not be compiled:\n${build.stdout}${build.stderr}`);
  execFileSync(process.execPath, ['scripts/copy-assets.js'], { cwd: server, stdio: 'inherit' });
}
