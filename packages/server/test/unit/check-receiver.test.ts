import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookHandler, memoryStore, toNodeHandler, type WebhookHandler } from '../../../receiver/src/index.ts';
import { checkReceiver, formatReport } from '../../src/devtools/check-receiver.ts';
import { startBrokenReceiver, type Fault } from '../helpers/broken-receivers.ts';
import { issue, makeCa } from '../helpers/certificates.ts';
import { runPayhooks } from '../helpers/cli.ts';
import { startAuthorizationServer, startTokenGateway } from '../helpers/oauth-server.ts';

/**
 * Issue 12 item 2: `payhooks check-receiver` against real HTTP receivers on port 0 (no
 * database): @payhooks/receiver holds every duty, and each deliberately broken receiver is
 * flagged for its own fault and nothing else.
 */
const SECRET = 'whsec_checkReceiverTestSecret0123456789abcdef';
const ALL_DUTIES = [
  'acknowledges_valid_event',
  'verifies_raw_bytes',
  'rejects_wrong_signature',
  'rejects_tampered_body',
  'rejects_old_timestamp',
  'rejects_future_timestamp',
  'rejects_missing_header',
  'rejects_malformed_header',
  'acknowledges_unknown_type',
  'acknowledges_duplicate_in_sequence',
  'acknowledges_duplicate_concurrently',
  'accepts_second_v1_wrong',
  'accepts_first_v1_wrong',
];
const REJECTIONS = ALL_DUTIES.filter((d) => d.startsWith('rejects_'));

let sdk: { url: string; handler: WebhookHandler; close(): Promise<void> };

beforeAll(async () => {
  const handler = createWebhookHandler({
    secret: SECRET,
    store: memoryStore(),
    onEvent: () => {},
    types: ['payment.succeeded'],
    onRejected: () => {},
  });
  const server = createServer(toNodeHandler(handler));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  sdk = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    handler,
    close: async () => {
      await handler.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
});
afterAll(async () => {
  await sdk?.close();
});

const failing = (r: Awaited<ReturnType<typeof checkReceiver>>) =>
  r.duties
    .filter((d) => !d.ok)
    .map((d) => d.id)
    .sort();

describe('check-receiver', () => {
  it('spec 4.2, 5.1, 6.1 rule 1, 6.2: @payhooks/receiver holds every duty', async () => {
    const report = await checkReceiver({ url: sdk.url, secret: SECRET });
    expect(report.duties.map((d) => d.id)).toEqual(ALL_DUTIES);
    expect(failing(report)).toEqual([]);
    expect(report.ok).toBe(true);
    for (const d of report.duties) expect(d.fix).toBeNull();
  });

  it('the correct hand-written reference receiver holds every duty too', async () => {
    const r = await startBrokenReceiver(SECRET, null);
    try {
      expect(failing(await checkReceiver({ url: r.url, secret: SECRET }))).toEqual([]);
    } finally {
      await r.close();
    }
  });

  const cases: Array<[Exclude<Fault, null>, string[]]> = [
    ['reparses_body', ['verifies_raw_bytes']],
    ['no_timestamp_check', ['rejects_future_timestamp', 'rejects_old_timestamp']],
    ['past_only_tolerance', ['rejects_future_timestamp']],
    ['first_v1_only', ['accepts_first_v1_wrong']],
    ['rejects_unknown_type', ['acknowledges_unknown_type']],
    ['conflict_on_duplicate', ['acknowledges_duplicate_concurrently', 'acknowledges_duplicate_in_sequence']],
    ['answers_401', [...REJECTIONS].sort()],
    ['crashes_on_malformed_header', ['rejects_malformed_header']],
  ];
  it.each(cases)('a receiver that %s is flagged for exactly that', async (fault, expected) => {
    const r = await startBrokenReceiver(SECRET, fault);
    try {
      const report = await checkReceiver({ url: r.url, secret: SECRET });
      expect(failing(report)).toEqual(expected);
      expect(report.ok).toBe(false);
      for (const d of report.duties.filter((x) => !x.ok)) {
        expect(d.spec).toMatch(/^\d/);
        expect(d.fix!.length).toBeGreaterThan(20);
      }
    } finally {
      await r.close();
    }
  });

  it('spec 4.2: a receiver with the wrong secret fails the acknowledgement duties and is told to check its secret', async () => {
    const report = await checkReceiver({ url: sdk.url, secret: 'whsec_notTheSecretTheReceiverUses000000000000' });
    const ack = report.duties.find((d) => d.id === 'acknowledges_valid_event')!;
    expect(ack.ok).toBe(false);
    expect(ack.observed).toMatch(/^answered 400/);
    expect(ack.fix).toMatch(/whsec_ secret/);
  });

  it('spec 6.2.2: a slow acknowledgement holds the duty with a warning', async () => {
    const r = await startBrokenReceiver(SECRET, null, 150);
    try {
      const report = await checkReceiver({ url: r.url, secret: SECRET, slowMs: 50 });
      expect(report.ok).toBe(true);
      expect(report.duties[0]!.warning).toMatch(/acknowledged after \d+ ms/);
      expect(formatReport(report)).toMatch(/^WARN {2}a valid, correctly signed event/m);
    } finally {
      await r.close();
    }
  });

  it('spec 8: no answer within the deadline fails the acknowledgement', async () => {
    const r = await startBrokenReceiver(SECRET, null, 400);
    try {
      const report = await checkReceiver({ url: r.url, secret: SECRET, deadlineMs: 100 });
      expect(report.duties[0]).toMatchObject({ id: 'acknowledges_valid_event', ok: false, observed: 'no answer within 100 ms' });
    } finally {
      await r.close();
    }
  });

  it('a receiver that is not running: one reason (connection refused), no duties checked', async () => {
    const report = await checkReceiver({ url: 'http://127.0.0.1:1/webhooks', secret: SECRET });
    expect(report).toMatchObject({ ok: false, duties: [], unreachable: expect.stringMatching(/^connection refused: .*ECONNREFUSED/) });
    expect(formatReport(report)).toMatch(/^Nothing answers at http:\/\/127\.0\.0\.1:1\/webhooks: connection refused/);
    expect(formatReport(report).split('\n')).toHaveLength(1);
  });

  it('a host that does not resolve and a TLS mismatch are said as such', async () => {
    const dns = await checkReceiver({ url: 'http://no-such-host.invalid/webhooks', secret: SECRET });
    expect(dns.unreachable).toMatch(/^DNS lookup failed/);
    // https against the plain-http SDK receiver: the handshake fails.
    const tls = await checkReceiver({ url: sdk.url.replace('http:', 'https:'), secret: SECRET });
    expect(tls.unreachable).toMatch(/^TLS handshake failed/);
  });
});

describe('payhooks check-receiver (CLI)', () => {
  it('exit 0 and --json with every duty for the SDK', async () => {
    const r = await runPayhooks(['check-receiver', sdk.url, '--secret', SECRET, '--json'], {});
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ url: sdk.url, ok: true });
    expect(report.duties).toHaveLength(ALL_DUTIES.length);
  });

  it('exit 1 and a report naming the fault, its spec section and the fix', async () => {
    const broken = await startBrokenReceiver(SECRET, 'reparses_body');
    try {
      const r = await runPayhooks(['check-receiver', broken.url, '--secret', SECRET], {});
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(
        /^FAIL {2}a valid event whose bytes are not what JSON.stringify makes of it .* \(spec 5\.1\.3, 5\.1\.4\): answered 400/m,
      );
      expect(r.stdout).toMatch(/fix: Compute the HMAC over the request body exactly as received/);
      expect(r.stdout).toContain('1 of 13 duties fail.');
    } finally {
      await broken.close();
    }
  });

  it('exit 3 and one line when nothing answers', async () => {
    const r = await runPayhooks(['check-receiver', 'http://127.0.0.1:1/webhooks', '--secret', SECRET], {});
    expect(r.code).toBe(3);
    expect(r.stdout.trim().split('\n')).toHaveLength(1);
    expect(r.stdout).toMatch(/^Nothing answers at http:\/\/127\.0\.0\.1:1\/webhooks: connection refused/);
  });

  it("--basic: behind a gateway that wants Basic credentials, the checks carry the endpoint's authentication from PAYHOOKS_RECEIVER_BASIC", async () => {
    const expected = `Basic ${Buffer.from('gw:pa:ss').toString('base64')}`;
    // The SDK's handler behind a gate that answers 401 to anything without the credentials.
    const inner = toNodeHandler(sdk.handler);
    const gated = createServer((req, res) => {
      if (req.headers.authorization !== expected) {
        res.writeHead(401).end('unauthorized');
        return;
      }
      inner(req, res);
    });
    await new Promise<void>((r) => gated.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(gated.address() as AddressInfo).port}/webhooks`;
    try {
      const without = await runPayhooks(['check-receiver', url, '--secret', SECRET, '--json'], {});
      expect(without.code).toBe(1);
      const withBasic = await runPayhooks(['check-receiver', url, '--secret', SECRET, '--json', '--basic'], {
        PAYHOOKS_RECEIVER_BASIC: 'gw:pa:ss',
      });
      expect(withBasic.code, withBasic.stdout + withBasic.stderr).toBe(0);
      expect(JSON.parse(withBasic.stdout)).toMatchObject({ url, ok: true });
      expect(withBasic.stdout + withBasic.stderr).not.toContain('pa:ss');
      const missing = await runPayhooks(['check-receiver', url, '--secret', SECRET, '--basic'], {});
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('PAYHOOKS_RECEIVER_BASIC');
    } finally {
      await new Promise<void>((r) => gated.close(() => r()));
    }
  });

  it('--client-cert/--client-key/--ca: behind a gateway that requires a client certificate of its own CA, on a private PKI', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-check-mtls-'));
    const ca = makeCa(dir, 'gw-ca');
    const serverCert = issue(dir, 'gw-ca', 'gateway', 'subjectAltName=IP:127.0.0.1');
    issue(dir, 'gw-ca', 'checker', 'extendedKeyUsage=clientAuth');
    const gated = createHttpsServer({ ...serverCert, ca, requestCert: true, rejectUnauthorized: true }, toNodeHandler(sdk.handler));
    await new Promise<void>((r) => gated.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(gated.address() as AddressInfo).port}/webhooks`;
    try {
      const flags = ['--client-cert', join(dir, 'checker.pem'), '--client-key', join(dir, 'checker.key'), '--ca', join(dir, 'gw-ca.pem')];
      const withCert = await runPayhooks(['check-receiver', url, '--secret', SECRET, '--json', ...flags], {});
      expect(withCert.code, withCert.stdout + withCert.stderr).toBe(0);
      expect(JSON.parse(withCert.stdout)).toMatchObject({ url, ok: true });
      // Without the certificate the gateway refuses every handshake: no duty holds (with TLS 1.3 the
      // refusal may come after the client's side of the handshake, so "nothing answers" or failures).
      const without = await runPayhooks(['check-receiver', url, '--secret', SECRET, '--ca', join(dir, 'gw-ca.pem'), '--json'], {});
      expect([1, 3]).toContain(without.code);
      expect(JSON.parse(without.stdout).ok).toBe(false);
      const half = await runPayhooks(['check-receiver', url, '--secret', SECRET, '--client-cert', join(dir, 'checker.pem')], {});
      expect(half.code).toBe(1);
      expect(half.stderr).toContain('--client-cert and --client-key go together');
    } finally {
      await new Promise<void>((r) => gated.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--token-url/--client-id: behind a gateway that takes OAuth 2.0 tokens, with the secret from PAYHOOKS_RECEIVER_CLIENT_SECRET', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-check-oauth-'));
    const auth = await startAuthorizationServer(dir, [{ client_id: 'checker', client_secret: 'checker-s3cret', scope: 'webhooks' }]);
    const gateway = await startTokenGateway(auth, { inner: toNodeHandler(sdk.handler) });
    try {
      writeFileSync(join(dir, 'idp-ca-only.pem'), auth.caPem);
      const flags = ['--token-url', auth.tokenUrl, '--client-id', 'checker', '--scope', 'webhooks', '--ca', join(dir, 'idp-ca-only.pem')];
      const ok = await runPayhooks(['check-receiver', gateway.url, '--secret', SECRET, '--json', ...flags], {
        PAYHOOKS_RECEIVER_CLIENT_SECRET: 'checker-s3cret',
      });
      expect(ok.code, ok.stdout + ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true });
      expect(auth.tokenRequests()).toBe(1);
      expect(gateway.seen.every((s) => s.status === 200 && s.clientId === 'checker')).toBe(true);
      expect(ok.stdout + ok.stderr).not.toContain('checker-s3cret');
      const wrong = await runPayhooks(['check-receiver', gateway.url, '--secret', SECRET, ...flags], {
        PAYHOOKS_RECEIVER_CLIENT_SECRET: 'not-it',
      });
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toContain('answered HTTP 401 (invalid_client');
      expect(wrong.stderr).not.toContain('not-it');
      const noSecret = await runPayhooks(['check-receiver', gateway.url, '--secret', SECRET, ...flags], {});
      expect(noSecret.code).toBe(1);
      expect(noSecret.stderr).toContain('PAYHOOKS_RECEIVER_CLIENT_SECRET');
    } finally {
      await gateway.close();
      await auth.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('bad input is refused with a message saying what to fix', async () => {
    const noPrefix = await runPayhooks(['check-receiver', sdk.url, '--secret', 'sk_test_nope'], {});
    expect(noPrefix.code).toBe(1);
    expect(noPrefix.stderr).toContain("--secret must be the endpoint's signing secret, which starts with whsec_");
    const badUrl = await runPayhooks(['check-receiver', 'localhost:3000', '--secret', SECRET], {});
    expect(badUrl.code).toBe(1);
    expect(badUrl.stderr).toMatch(/must be http or https|is not a URL/);
  });
});
