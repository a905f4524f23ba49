import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'python');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};

describe("sdks/python: the library's own tests (pytest, real PostgreSQL and Redis)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    const run = spawnSync('/usr/bin/python3', ['-m', 'pytest', '-v', '-p', 'no:cacheprovider'], {
      cwd: SDK,
      encoding: 'utf8',
      timeout: 180_000,
      env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
    });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/=+ \d+ passed(, \d+ warnings?)? in [\d.]+s/);
    expect(output).not.toMatch(/\b(failed|skipped|error)\b.* in [\d.]+s/);
    const vectorTests = output.match(/test_vectors\.py::test_vector\[\S+\] PASSED/g) ?? [];
    expect(vectorTests.length, output).toBe(vectors.vectors.length);
  });
});

describeExampleReceiver('python', join(REPO_ROOT, 'examples', 'receiver-python'));
