import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'php');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: Array<{ name: string }>;
};
const reports = mkdtempSync(join(tmpdir(), 'payhooks-php-'));
afterAll(() => rmSync(reports, { recursive: true, force: true }));

describe("sdks/php: the library's own tests (PHPUnit, real PostgreSQL, Redis and php -S)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    const junit = join(reports, 'junit.xml');
    // Debian's phpunit and PHP; no `composer install` (tests/bootstrap.php autoloads).
    const run = spawnSync('/usr/bin/phpunit', ['--log-junit', junit], { cwd: SDK, encoding: 'utf8', timeout: 240_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/^OK \(\d+ tests, \d+ assertions\)$/m);
    // Each vector is one data set of VectorsTest::testVector, named after the vector.
    const report = readFileSync(junit, 'utf8');
    const ran = [...report.matchAll(/<testcase name="testVector with data set &quot;([a-z0-9_]+)&quot;"[^>]*\/>/g)].map((m) => m[1]);
    expect(ran.sort(), output).toEqual(vectors.vectors.map((v) => v.name).sort());
  }, 240_000);
});

describeExampleReceiver('php', join(REPO_ROOT, 'examples', 'receiver-php'));
