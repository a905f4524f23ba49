import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

/**
 * scripts/test.sh (`npm test`): set-up, lint, then the build and vitest with the type check beside
 * them. Run from a scratch copy of the repository's layout whose `npm`, set-up and vitest are
 * stand-ins that log what ran and fail when told to, so each step's outcome can be chosen.
 */
const SCRIPT = fileURLToPath(new URL('../../../../scripts/test.sh', import.meta.url));

let repo: string;

beforeEach(() => {
  repo = mkdtempSync(join(tmpdir(), 'payhooks-test-command-'));
  mkdirSync(join(repo, 'scripts'));
  mkdirSync(join(repo, 'node_modules', '.bin'), { recursive: true });
  mkdirSync(join(repo, 'bin'));
  copyFileSync(SCRIPT, join(repo, 'scripts', 'test.sh'));
  const stub = (path: string, body: string) => {
    writeFileSync(path, `#!/usr/bin/env bash\n${body}\n`);
    chmodSync(path, 0o755);
  };
  // Each stand-in appends its name to ran.log, and fails when FAIL names it.
  stub(join(repo, 'scripts', 'test-setup.sh'), 'echo setup >> "$LOG"; [ "$FAIL" != setup ]');
  stub(
    join(repo, 'bin', 'npm'),
    [
      'step="$3"',
      'if [ "$step" = typecheck ]; then echo "src/x.ts(1,1): error TS2322: a type error" ; fi',
      'echo "$step" >> "$LOG"',
      '[ "$FAIL" != "$step" ]',
    ].join('\n'),
  );
  stub(join(repo, 'node_modules', '.bin', 'vitest'), 'echo "vitest $*" >> "$LOG"; [ "$FAIL" != vitest ]');
});
afterEach(() => rmSync(repo, { recursive: true, force: true }));

function npmTest(fail = '', args: string[] = []) {
  const log = join(repo, 'ran.log');
  writeFileSync(log, '');
  const r = spawnSync('bash', [join(repo, 'scripts', 'test.sh'), ...args], {
    encoding: 'utf8',
    env: { PATH: `${join(repo, 'bin')}:${process.env.PATH ?? ''}`, LOG: log, FAIL: fail },
  });
  return { status: r.status, stderr: r.stderr, ran: readFileSync(log, 'utf8').trim().split('\n').sort() };
}

describe('scripts/test.sh', () => {
  it('runs set-up, lint, type check, build and vitest (with the arguments), and passes when all do', () => {
    const r = npmTest('', ['--reporter=json']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.ran).toEqual(['build', 'lint', 'setup', 'typecheck', 'vitest run --reporter=json']);
    expect(r.stderr).not.toContain('type check failed');
  });

  it('a type error fails the command after the suite ran, and its output is shown', () => {
    const r = npmTest('typecheck');
    expect(r.status).toBe(1);
    expect(r.ran).toContain('vitest run');
    expect(r.stderr).toContain('error TS2322');
    expect(r.stderr).toContain('the type check failed');
  });

  it("the suite's failure is the command's, whatever the type check says", () => {
    expect(npmTest('vitest').status).toBe(1);
  });

  it('a failed build fails the command without running the suite', () => {
    const r = npmTest('build');
    expect(r.status).toBe(1);
    expect(r.ran).not.toContain('vitest run');
  });

  it('a failed set-up or lint stops everything after it', () => {
    expect(npmTest('setup')).toMatchObject({ status: 1, ran: ['setup'] });
    expect(npmTest('lint')).toMatchObject({ status: 1, ran: ['lint', 'setup'] });
  });
});
