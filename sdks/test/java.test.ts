import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'java');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};
const build = mkdtempSync(join(tmpdir(), 'payhooks-java-'));
afterAll(() => rmSync(build, { recursive: true, force: true }));

describe("sdks/java: the library's own tests (JUnit 5, real PostgreSQL, Redis, HttpServer and Tomcat)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    const run = spawnSync(join(SDK, 'build.sh'), ['test'], {
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, PAYHOOKS_JAVA_BUILD: build },
    });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/\[\s+0 tests failed\s+\]/);
    // Each vector is a dynamic test named "vector <name>" in the tree report.
    const vectorTests = output.match(/vector [a-z0-9_]+\S*\s+\S*✔/g) ?? [];
    expect(vectorTests.length, output).toBe(vectors.vectors.length);
  }, 300_000);
});

describeExampleReceiver('java', join(REPO_ROOT, 'examples', 'receiver-java'), { startTimeoutMs: 180_000 });
