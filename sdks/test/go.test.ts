import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'go');
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};

describe("sdks/go: the module's own tests (go test, real PostgreSQL and Redis)", () => {
  it('spec 5.1, 6.2: pass, and run every shared signature vector', () => {
    // Offline: a workspace resolves lib/pq (a test dependency) to Debian's copy, never the Go proxy.
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-go-'));
    writeFileSync(join(dir, 'go.work'), `go 1.19\n\nuse (\n\t${SDK}\n\t/usr/share/gocode/src/github.com/lib/pq\n)\n`);
    const run = spawnSync('go', ['test', '-count=1', '-v', './...'], {
      cwd: SDK,
      encoding: 'utf8',
      timeout: 300_000,
      env: {
        ...process.env,
        GOWORK: join(dir, 'go.work'),
        GOPROXY: 'off',
        GOFLAGS: '',
        GOTOOLCHAIN: 'local',
        GOCACHE: process.env.GOCACHE ?? join(process.env.HOME ?? tmpdir(), '.cache', 'payhooks-receiver-go', 'build'),
        GOPATH: process.env.GOPATH ?? join(dir, 'gopath'),
      },
    });
    const output = `${run.stdout}\n${run.stderr}`;
    expect(run.status, output).toBe(0);
    expect(output).toMatch(/^ok\s+github\.com\/payhooks\/payhooks\/sdks\/go\s/m);
    expect(output).not.toMatch(/--- (FAIL|SKIP)/);
    const vectorTests = output.match(/--- PASS: TestVectors\/\S+/g) ?? [];
    expect(vectorTests.length, output).toBe(vectors.vectors.length);
  });
});

// The first start compiles the example (and lib/pq): allow for it on a busy machine.
describeExampleReceiver('go', join(REPO_ROOT, 'examples', 'receiver-go'), { startTimeoutMs: 240_000 });
