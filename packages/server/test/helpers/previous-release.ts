import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The repository this checkout is in. */
const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const MIGRATIONS = 'packages/server/src/db/migrations';

export interface PreviousRelease {
  /** The commit built: the one before the newest migration was added. */
  commit: string;
  /** The newest migration of this checkout (the one the previous release does not have). */
  newest: string;
  /** Its `payhooks` CLI (`packages/server/bin/payhooks.js` of the build). */
  bin: string;
  remove(): Promise<void>;
}

const git = async (...args: string[]) => (await run('git', args, { cwd: REPO })).stdout.trim();

/**
 * The release before this checkout's newest migration, built and runnable beside this one: the
 * parent of the commit that added the newest migration file (or HEAD, when that file is not
 * committed yet), checked out as a `git worktree` in a temporary directory. It is found from
 * git's history each time, so it follows every new migration without anyone editing the test.
 *
 * Built cheaply: no `npm ci`. Its node_modules links every installed package of this checkout
 * except the workspace's own (@payhooks/*), which point to the worktree's packages; only
 * packages/contract and packages/server are compiled (JavaScript only), and the migrations
 * copied beside them. The portal is not built (the previous API answers 503 for its page;
 * nothing here needs it).
 */
export async function buildPreviousRelease(): Promise<PreviousRelease> {
  const newest = readdirSync(join(REPO, MIGRATIONS))
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .at(-1)!;
  const added = await git('log', '-1', '--format=%H', '--diff-filter=A', '--', `${MIGRATIONS}/${newest}`);
  if (!added && (await git('rev-parse', '--is-shallow-repository')) === 'true')
    throw new Error(`this is a shallow clone: the commit that added ${newest} is not in it; run \`git fetch --unshallow\` first`);
  const commit = await git('rev-parse', added ? `${added}^` : 'HEAD');
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-previous-'));
  rmSync(dir, { recursive: true });
  await git('worktree', 'add', '--detach', dir, commit);
  const remove = async () => {
    await git('worktree', 'remove', '--force', dir).catch(() => rmSync(dir, { recursive: true, force: true }));
    await git('worktree', 'prune').catch(() => {});
  };
  try {
    linkNodeModules(dir);
    const tsc = join(REPO, 'node_modules/typescript/bin/tsc');
    // JavaScript only: no type check (--noCheck; that release was type-checked when it was
    // current) and no declaration files (nothing here compiles against them). Together they were
    // most of this build's CPU on a 2-core machine (10.3 s of CPU with declarations, 7.3 s without).
    const emitOnly = ['--noCheck', '--declaration', 'false', '--composite', 'false', '--incremental', 'false', '--tsBuildInfoFile', 'null'];
    for (const pkg of ['contract', 'server'])
      await run(process.execPath, [tsc, '-p', join(dir, `packages/${pkg}/tsconfig.build.json`), ...emitOnly], { cwd: dir });
    await run(process.execPath, [join(dir, 'packages/server/scripts/copy-assets.js')], { cwd: dir });
    return { commit, newest, bin: join(dir, 'packages/server/bin/payhooks.js'), remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

/** node_modules of the worktree: this checkout's packages, the worktree's own workspace packages. */
function linkNodeModules(dir: string): void {
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  for (const entry of readdirSync(join(REPO, 'node_modules'))) {
    if (entry === '@payhooks') continue;
    symlinkSync(join(REPO, 'node_modules', entry), join(modules, entry));
  }
  mkdirSync(join(modules, '@payhooks'));
  for (const pkg of readdirSync(join(dir, 'packages'))) symlinkSync(join(dir, 'packages', pkg), join(modules, '@payhooks', pkg));
  for (const pkg of ['server', 'contract']) {
    const own = join(REPO, 'packages', pkg, 'node_modules');
    if (existsSync(own) && !existsSync(join(dir, 'packages', pkg, 'node_modules')))
      symlinkSync(own, join(dir, 'packages', pkg, 'node_modules'));
  }
}
