import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';

const SDK = join(REPO_ROOT, 'sdks', 'go');
const DEBIAN_PQ = '/usr/share/gocode/src/github.com/lib/pq';
const vectors = JSON.parse(readFileSync(join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json'), 'utf8')) as {
  vectors: unknown[];
};

// Where `go get` finds the module: the monorepo's path (the packages' repository field) + /sdks/go.
const repositoryUrl = (
  JSON.parse(readFileSync(join(REPO_ROOT, 'packages/receiver/package.json'), 'utf8')) as { repository: { url: string } }
).repository.url;
const MODULE = `${repositoryUrl.replace(/^git\+https:\/\//, '').replace(/\.git$/, '')}/sdks/go`;

const scratch = mkdtempSync(join(tmpdir(), 'payhooks-go-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Offline, with Debian's Go: never the Go proxy nor a downloaded toolchain. */
function goEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GOPROXY: 'off',
    GOFLAGS: '',
    GOTOOLCHAIN: 'local',
    GOCACHE: process.env.GOCACHE ?? join(process.env.HOME ?? tmpdir(), '.cache', 'payhooks-receiver-go', 'build'),
    GOPATH: process.env.GOPATH ?? join(scratch, 'gopath'),
    ...extra,
  };
}

/** A workspace that resolves lib/pq (a test dependency) to Debian's copy. */
function workspace(): string {
  const file = join(scratch, 'go.work');
  writeFileSync(file, `go 1.19\n\nuse (\n\t${SDK}\n\t${DEBIAN_PQ}\n)\n`);
  return file;
}

function go(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeout = 300_000): { status: number | null; output: string } {
  const run = spawnSync('go', args, { cwd, encoding: 'utf8', timeout, env });
  return { status: run.status, output: `$ go ${args.join(' ')}\n${run.stdout}\n${run.stderr}${run.error ? `\n${run.error.message}` : ''}` };
}

/** Every file of a module folder, relative paths, as a module zip would hold them. */
function moduleFiles(dir: string, prefix = ''): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (entry.name.startsWith('.')) continue;
      files.push(...moduleFiles(dir, rel));
    } else if (entry.isFile() || entry.isSymbolicLink()) {
      files.push(rel);
    }
  }
  return files;
}

/**
 * Publishes `dir` as `module@version` in a file-system module proxy (the layout `GOPROXY=file://`
 * reads: list, .info, .mod and a zip whose paths start with `module@version/`).
 */
function publish(proxy: string, module: string, version: string, dir: string): void {
  const at = join(proxy, module, '@v');
  mkdirSync(at, { recursive: true });
  writeFileSync(join(at, 'list'), `${version}\n`);
  writeFileSync(join(at, `${version}.info`), JSON.stringify({ Version: version, Time: '2026-01-01T00:00:00Z' }));
  cpSync(join(dir, 'go.mod'), join(at, `${version}.mod`));
  const stage = join(scratch, 'stage', `${module}@${version}`);
  rmSync(stage, { recursive: true, force: true });
  for (const file of moduleFiles(dir)) {
    mkdirSync(join(stage, file, '..'), { recursive: true });
    cpSync(join(dir, file), join(stage, file), { dereference: true });
  }
  const zip = spawnSync(
    'python3',
    [
      '-c',
      `import os, sys, zipfile
root, top, out = sys.argv[1], sys.argv[2], sys.argv[3]
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for base, _, names in os.walk(os.path.join(root, top)):
        for name in sorted(names):
            path = os.path.join(base, name)
            z.write(path, os.path.relpath(path, root))`,
      join(scratch, 'stage'),
      `${module}@${version}`,
      join(at, `${version}.zip`),
    ],
    { encoding: 'utf8' },
  );
  expect(zip.status, zip.stderr).toBe(0);
}

describe('sdks/go: the module as a merchant gets it, and its own checks (Debian Go, offline)', () => {
  it("go.mod's module path is where the code is: the repository's path + /sdks/go, imported by that path", () => {
    expect(MODULE).toBe('github.com/payhooks/payhooks/sdks/go');
    expect(readFileSync(join(SDK, 'go.mod'), 'utf8')).toMatch(new RegExp(`^module ${MODULE.replace(/[./]/g, '\\$&')}$`, 'm'));
    const example = join(REPO_ROOT, 'examples', 'receiver-go');
    expect(readFileSync(join(example, 'main.go'), 'utf8')).toContain(`payhooks "${MODULE}"`);
    expect(readFileSync(join(example, 'go.mod'), 'utf8')).toContain(`\t${MODULE} v`);
    expect(readFileSync(join(SDK, 'README.md'), 'utf8')).toContain(`go get ${MODULE}@`);
  });

  it('go vet ./... finds nothing', () => {
    const run = go(['vet', './...'], SDK, goEnv({ GOWORK: workspace() }));
    expect(run.status, run.output).toBe(0);
  }, 300_000);

  it('spec 5.1, 6.2: go test -race passes on real PostgreSQL and Redis, and runs every shared signature vector', () => {
    const run = go(['test', '-race', '-count=1', '-v', './...'], SDK, goEnv({ GOWORK: workspace() }), 600_000);
    expect(run.status, run.output).toBe(0);
    expect(run.output).toMatch(new RegExp(`^ok\\s+${MODULE.replace(/[./]/g, '\\$&')}\\s`, 'm'));
    expect(run.output).not.toMatch(/--- (FAIL|SKIP)/);
    expect(run.output).not.toMatch(/WARNING: DATA RACE/);
    const vectorTests = run.output.match(/--- PASS: TestVectors\/\S+/g) ?? [];
    expect(vectorTests.length, run.output).toBe(vectors.vectors.length);
  }, 600_000);

  it("a merchant's module: go get of the module path (from a module proxy holding this checkout) builds and runs a program against it", () => {
    // The same steps as `go get github.com/payhooks/payhooks/sdks/go@vX.Y.Z` from the repository's
    // tag sdks/go/vX.Y.Z, with a file-system proxy in place of the network: the zip holds sdks/go
    // alone, so anything it needs from outside that folder would fail here.
    const proxy = join(scratch, 'proxy');
    publish(proxy, MODULE, 'v0.0.0-ci', SDK);
    const pqVersion = /github\.com\/lib\/pq (v\S+)/.exec(readFileSync(join(SDK, 'go.mod'), 'utf8'))?.[1];
    expect(pqVersion).toBeDefined();
    publish(proxy, 'github.com/lib/pq', pqVersion!, DEBIAN_PQ);

    const app = join(scratch, 'merchant');
    mkdirSync(app, { recursive: true });
    writeFileSync(join(app, 'go.mod'), 'module example.com/merchant\n\ngo 1.19\n');
    writeFileSync(
      join(app, 'main.go'),
      `package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/lib/pq"
	payhooks "${MODULE}"
)

func main() {
	secrets := []string{"whsec_merchant"}
	event := map[string]any{"id": "evt_1", "object": "event", "type": "payment.succeeded",
		"data": map[string]any{"object": map[string]any{"id": "pay_1"}}}
	body, header, _ := payhooks.SignTestDelivery(event, secrets, time.Now().Unix())
	verified, err := payhooks.Verify(body, header, secrets, payhooks.VerifyOptions{})
	if err != nil {
		fmt.Println("fresh:", err)
		os.Exit(1)
	}
	fmt.Println("verified", verified.ID, verified.Object()["id"])
	for _, at := range []time.Time{time.Now().Add(-time.Hour), time.Now().Add(time.Hour)} {
		body, header, _ = payhooks.SignTestDelivery(event, secrets, at.Unix())
		_, err = payhooks.Verify(body, header, secrets, payhooks.VerifyOptions{})
		var verr *payhooks.VerificationError
		if !errors.As(err, &verr) {
			fmt.Println("not a VerificationError:", err)
			os.Exit(1)
		}
		var reason payhooks.Reason = verr.Reason
		fmt.Println("refused", reason, verr.Status(), errors.Is(err, payhooks.ErrTimestampTooOld), errors.Is(err, payhooks.ErrTimestampTooNew))
	}
	db, _ := sql.Open("postgres", "postgres://127.0.0.1/none?sslmode=disable") // not connected
	store, err := payhooks.NewPostgresStore(db, payhooks.PostgresOptions{NoAutoMigrate: true})
	if err != nil {
		fmt.Println("store:", err)
		os.Exit(1)
	}
	fmt.Println("schema has payhooks_events:", strings.Contains(store.SchemaSQL(), "payhooks_events"))
}
`,
    );
    const env = goEnv({
      GOPROXY: `file://${proxy}`,
      GOSUMDB: 'off',
      GONOSUMDB: '*',
      GOFLAGS: '-mod=mod',
      GOWORK: 'off',
      GOPATH: join(scratch, 'merchant-gopath'),
      GOMODCACHE: join(scratch, 'merchant-gopath', 'pkg', 'mod'),
    });
    const get = go(['get', `${MODULE}@latest`, `github.com/lib/pq@${pqVersion}`], app, env);
    expect(get.status, get.output).toBe(0);
    expect(readFileSync(join(app, 'go.mod'), 'utf8')).toContain(`${MODULE} v0.0.0-ci`);
    const tidy = go(['mod', 'tidy'], app, env);
    expect(tidy.status, tidy.output).toBe(0);
    const built = go(['build', '-o', join(scratch, 'merchant-bin'), '.'], app, env);
    expect(built.status, built.output).toBe(0);
    const ran = spawnSync(join(scratch, 'merchant-bin'), [], { encoding: 'utf8', timeout: 30_000 });
    expect(ran.status, `${ran.stdout}\n${ran.stderr}`).toBe(0);
    expect(ran.stdout.trim().split('\n')).toEqual([
      'verified evt_1 pay_1',
      'refused timestamp_out_of_tolerance 400 true false',
      'refused timestamp_out_of_tolerance 400 false true',
      'schema has payhooks_events: true',
    ]);
  }, 300_000);
});

// The first start compiles the example (and lib/pq): allow for it on a busy machine.
describeExampleReceiver('go', join(REPO_ROOT, 'examples', 'receiver-go'), { startTimeoutMs: 240_000 });
