import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * scripts/test-setup.sh, which `npm test` and .ci/run run first. Where it may not install (not
 * root, or no apt-get) it changes nothing and stops at once with one list of what is missing and
 * the command for each. Fake programs first on PATH stand in for the machine: dpkg-query saying
 * which packages are installed, pg_isready saying PostgreSQL is down, apt-get recording a call.
 */
const SCRIPT = fileURLToPath(new URL('../../../../scripts/test-setup.sh', import.meta.url));

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeBin(programs: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-setup-'));
  dirs.push(dir);
  for (const [name, body] of Object.entries(programs)) {
    writeFileSync(join(dir, name), `#!/bin/bash\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

function run(path: string, env: Record<string, string>) {
  const started = performance.now();
  const r = spawnSync('/bin/bash', [SCRIPT], { env: { PATH: path, HOME: tmpdir(), ...env }, encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stderr: r.stderr, ms: performance.now() - started };
}

/** dpkg-query -W answering "installed" for every package but those in $FAKE_MISSING. */
const DPKG_QUERY = `shift 2
for p in "$@"; do case " $FAKE_MISSING " in *" $p "*) ;; *) echo "$p ii " ;; esac; done`;

describe('scripts/test-setup.sh', () => {
  it('not root: installs and starts nothing, and lists every missing package and stopped service with its command, within seconds', () => {
    const calls = join(tmpdir(), `payhooks-setup-apt-${process.pid}`);
    const bin = fakeBin({
      'dpkg-query': DPKG_QUERY,
      pg_isready: 'exit 2',
      'apt-get': `echo "apt-get $*" >> ${calls}`,
    });
    const r = run(`${bin}:${process.env.PATH}`, { PAYHOOKS_TEST_SETUP_UID: '1000', FAKE_MISSING: 'chromium php-fpm' });
    try {
      expect(r.status, r.stderr).toBe(1);
      expect(r.ms).toBeLessThan(10_000);
      expect(r.stderr.match(/Missing:/g)).toHaveLength(1);
      expect(r.stderr).toContain('Debian packages: chromium php-fpm\n');
      expect(r.stderr).toContain('sudo apt-get update && sudo apt-get install -y chromium php-fpm\n');
      expect(r.stderr).toContain('PostgreSQL on 127.0.0.1:5432');
      expect(r.stderr).toMatch(/sudo pg_ctlcluster --skip-systemctl-redirect \S+ main start/);
      expect(r.stderr).toContain('sudo bash scripts/test-setup.sh');
      expect(existsSync(calls), 'apt-get was called').toBe(false);
    } finally {
      rmSync(calls, { force: true });
    }
  });

  it('root without dpkg or apt-get (not Debian): lists every package by its Debian name and an old Node.js, and stops', () => {
    // A PATH with only what the script needs to report: no dpkg-query, no apt-get.
    const bin = fakeBin({ node: 'echo v20.11.1', pg_isready: 'exit 0' });
    for (const tool of ['awk', 'ls', 'sort', 'tail', 'cat']) {
      const found = spawnSync('/bin/bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim();
      if (found) symlinkSync(found, join(bin, tool));
    }
    const r = run(bin, { PAYHOOKS_TEST_SETUP_UID: '0' });
    expect(r.status, r.stderr).toBe(1);
    expect(r.ms).toBeLessThan(10_000);
    expect(r.stderr.match(/Missing:/g)).toHaveLength(1);
    expect(r.stderr).toContain('Node.js 20.19 or newer (found v20.11.1)');
    expect(r.stderr).toMatch(/Debian packages: git postgresql redis-server rabbitmq-server nats-server chromium python3 /);
    expect(r.stderr).toContain('no apt-get here');
    expect(r.stderr).not.toContain('PostgreSQL on 127.0.0.1:5432');
  });

  it('PAYHOOKS_TEST_SETUP=skip checks nothing', () => {
    const bin = fakeBin({ 'dpkg-query': DPKG_QUERY });
    const r = run(bin, { PAYHOOKS_TEST_SETUP: 'skip', PAYHOOKS_TEST_SETUP_UID: '1000', FAKE_MISSING: 'git' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
  });

  it('the list of Debian packages is in the script alone: .ci/run names none', () => {
    const ci = readFileSync(fileURLToPath(new URL('../../../../.ci/run', import.meta.url)), 'utf8');
    expect(ci).toContain('scripts/test-setup.sh');
    expect(ci).not.toMatch(/apt-get install/);
  });
});
