import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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

describe('sdks/python: the package a merchant installs (mypy, python -m build, a fresh virtualenv)', () => {
  const work = mkdtempSync(join(tmpdir(), 'payhooks-py-'));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  // Debian's interpreter and tools (not the first python3 on PATH), offline: no index, no isolation.
  const env = { PATH: '/usr/bin:/bin', HOME: work, LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1', PIP_NO_INDEX: '1' };
  const run = (command: string, args: string[], cwd: string) => {
    const r = spawnSync(command, args, { cwd, encoding: 'utf8', env, timeout: 400_000 });
    return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
  };
  // mypy's own incremental cache, kept between runs outside the checkout: it re-checks what
  // changed (and what depends on it) and reads the rest, the standard library's stubs above all,
  // from the cache. Cold, one run costs about 15 s of CPU; warm, under a second.
  const mypyCache = join(homedir(), '.cache', 'payhooks-tests', 'mypy');
  const version = readFileSync(join(SDK, 'src/payhooks/__init__.py'), 'utf8').match(/^__version__ = "([^"]+)"$/m)![1]!;

  it('mypy --strict (pyproject.toml) finds no issue in the package', () => {
    const r = run('/usr/bin/python3', ['-m', 'mypy', '--cache-dir', mypyCache], SDK);
    expect(r.status, r.output).toBe(0);
    expect(r.output).toMatch(/Success: no issues found in \d+ source files/);
  }, 420_000);

  it('builds an sdist and a wheel, installs the wheel into a new virtualenv, and imports it typed from outside the tree', () => {
    // Built from a copy, so the source tree gets no build/ or egg-info.
    const src = join(work, 'src');
    cpSync(SDK, src, { recursive: true, filter: (p) => !/(__pycache__|\.egg-info|\.mypy_cache|^build$|^dist$)/.test(basename(p)) });
    const build = run('/usr/bin/python3', ['-m', 'build', '--no-isolation', '--outdir', join(work, 'dist'), src], work);
    expect(build.status, build.output).toBe(0);
    const wheel = `payhooks-${version}-py3-none-any.whl`;
    expect(readdirSync(join(work, 'dist')).sort()).toEqual([wheel, `payhooks-${version}.tar.gz`].sort());

    // --system-site-packages: the optional extras (psycopg, redis, Flask…) come from Debian's
    // packages; the library itself has no dependency and is installed from the wheel only.
    const venv = join(work, 'venv');
    const made = run('/usr/bin/python3', ['-m', 'venv', '--system-site-packages', venv], work);
    expect(made.status, made.output).toBe(0);
    const python = join(venv, 'bin', 'python');
    const install = run(python, ['-m', 'pip', 'install', '--no-index', '--disable-pip-version-check', join(work, 'dist', wheel)], work);
    expect(install.status, install.output).toBe(0);

    writeFileSync(join(work, 'check.py'), CHECK);
    const vectorsFile = join(REPO_ROOT, 'packages/contract/test-vectors/webhook-signatures.json');
    const imported = run(python, [join(work, 'check.py'), venv, version, vectorsFile], work);
    expect(imported.status, imported.output).toBe(0);
    expect(imported.output).toContain(`payhooks ${version} from ${venv}`);

    // A merchant's strictly typed code against the installed package: mypy sees its py.typed marker.
    writeFileSync(join(work, 'merchant.py'), MERCHANT);
    const typed = run(
      '/usr/bin/python3',
      ['-m', 'mypy', '--strict', '--cache-dir', mypyCache, '--python-executable', python, join(work, 'merchant.py')],
      work,
    );
    expect(typed.status, typed.output).toBe(0);
  }, 600_000);
});

const CHECK = `
import importlib.metadata, os, sys
venv, version = sys.argv[1], sys.argv[2]
import payhooks
from payhooks.stores import PostgresStore, RedisStore
assert payhooks.__file__.startswith(venv), payhooks.__file__
assert payhooks.__version__ == version == importlib.metadata.version("payhooks"), payhooks.__version__
assert os.path.isfile(os.path.join(os.path.dirname(payhooks.__file__), "py.typed"))
for error in (payhooks.WebhookVerificationError, payhooks.CreditInProgressError, payhooks.ConfigurationError):
    assert issubclass(error, payhooks.PayhooksError), error
try:
    payhooks.verify(b"{}", {}, "not-a-secret")
    raise SystemExit("no error")
except payhooks.PayhooksError as e:
    assert isinstance(e, payhooks.ConfigurationError) and isinstance(e, ValueError), repr(e)
event = {"id": "evt_1", "object": "event", "type": "payment.succeeded", "data": {"object": {"id": "pay_1", "object": "payment"}}}
body, headers = payhooks.sign_test_delivery(event, "whsec_install_check")
assert payhooks.verify(body, headers, "whsec_install_check")["id"] == "evt_1"
handler = payhooks.WebhookHandler(secret="whsec_install_check", store=payhooks.MemoryStore(), on_event=lambda e, c: None)
assert handler.handle(body, headers).status == 200
handler.close()
# The ed25519 extra: Debian's python3-cryptography, seen through --system-site-packages.
import base64, json
vectors = {v["name"]: v for v in json.load(open(sys.argv[3]))["vectors"]}
for name in ("v1a_valid_public_key_only", "v1a_tampered_body"):
    v = vectors[name]
    try:
        outcome = payhooks.verify(base64.b64decode(v["body_base64"]), v["headers"], public_keys=v["public_keys"], now=v["now_ms"] / 1000)["id"]
    except payhooks.WebhookVerificationError as e:
        outcome = e.reason
    assert outcome == v["expected"].get("event_id", v["expected"].get("reason")), (name, outcome)
print(f"payhooks {payhooks.__version__} from {sys.prefix}")
`;

const MERCHANT = `
from typing import Any, Dict, List

import payhooks

credited: List[str] = []


def on_event(event: payhooks.Event, context: payhooks.EventContext) -> None:
    payment: Dict[str, Any] = event["data"]["object"]
    credited.append(payment["id"])


handler = payhooks.WebhookHandler(secret="whsec_x", store=payhooks.MemoryStore(), on_event=on_event, types=["payment.succeeded"])
answer: payhooks.WebhookResponse = handler.handle(b"{}", {})
status: int = answer.status
version: str = payhooks.__version__


def verify_with_a_public_key(body: bytes, headers: Dict[str, str]) -> payhooks.Event:
    return payhooks.verify(body, headers, public_keys=["whpk_..."])


keyed = payhooks.WebhookHandler(public_keys=["whpk_..."], store=payhooks.MemoryStore(), on_event=on_event)
`;

describeExampleReceiver('python', join(REPO_ROOT, 'examples', 'receiver-python'));
