import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'ruby');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};

describe("sdks/ruby: the gem's own tests (minitest, real PostgreSQL and Redis)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    const run = spawnSync('/usr/bin/ruby', ['-Itest', 'test/all.rb', '-v'], { cwd: SDK, encoding: 'utf8', timeout: 120_000 });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/\d+ runs, \d+ assertions, 0 failures, 0 errors, 0 skips/);
    const vectorTests = output.match(/TestVectors#test_vector_\S+ = [\d.]+ s = \./g) ?? [];
    expect(vectorTests.length, output).toBe(vectors.vectors.length);
  });
});

describeExampleReceiver('ruby', join(REPO_ROOT, 'examples', 'receiver-ruby'));
