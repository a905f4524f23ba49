import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { freePort, until } from '../helpers/wait.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_ID_HEADER, SIGNATURE_HEADER, signPayload, signStandardWebhooks, standardWebhooksKey } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { publish } from '../helpers/publish.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Issue 12 item 5: the hand-verification snippets of docs/webhooks.md, extracted from the doc and
 * run as they are (Node.js without the SDK, Python's standard library), accept a real delivery
 * from the delivery engine and refuse a tampered or stale one with 400.
 */
const DOC = readFileSync(fileURLToPath(new URL('../../../../docs/webhooks.md', import.meta.url)), 'utf8');

function snippet(heading: string, lang: string): string {
  const section = DOC.slice(DOC.indexOf(heading));
  const m = new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``).exec(section);
  if (!m) throw new Error(`no ${lang} block under ${heading} in docs/webhooks.md`);
  return m[1]!;
}

let svc: TestService;
let p: CreatedPlatform;
const children: ChildProcess[] = [];

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true });
  p = await svc.platform();
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await svc?.close();
});

const variants: Array<[string, string, string, string[]]> = [
  ['Node.js (no SDK)', '### Node.js (no SDK)', 'js', [process.execPath]],
  ['Python (standard library)', '### Python (standard library)', 'python', ['python3']],
];

describe.each(variants)('docs/webhooks.md snippet: %s', (_name, heading, lang, command) => {
  let url: string;
  let endpoint: { id: string; secret: string };

  beforeAll(async () => {
    endpoint = await (async () => {
      const port = await freePort();
      url = `http://127.0.0.1:${port}/webhooks`;
      const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
      return r.body;
    })();
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-doc-'));
    const file = join(dir, lang === 'js' ? 'receiver.mjs' : 'receiver.py');
    writeFileSync(file, snippet(heading, lang));
    const child = spawn(command[0]!, [file], {
      env: { PATH: process.env.PATH ?? '', PAYHOOKS_WEBHOOK_SECRET: endpoint.secret, PORT: new URL(url).port },
      stdio: 'ignore',
    });
    children.push(child);
    // Ready when it answers (an unsigned request is a 400).
    await until(async () => (await fetch(url, { method: 'POST', body: '{}' })).status === 400, { message: `the ${lang} snippet to start` });
  });

  it('spec 5.1: accepts a real delivery from the delivery engine (the attempt is 200, the delivery delivered)', async () => {
    const { event } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded' });
    await svc.ctx.createWorker().drain();
    const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${endpoint.id}`);
    const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${r.body.data[0].id}`);
    expect(d.body.state).toBe('delivered');
    expect(d.body.attempts[0]).toMatchObject({ status_code: 200, response_body: 'ok' });
  });

  it('spec 5.1.4, 5.1.6, 5.1.7: refuses a tampered body, a wrong signature and a timestamp outside the 300 s tolerance with 400', async () => {
    const { event } = await publish(svc.ctx, p.merchant_id, {
      type: 'payment.failed',
      object: { id: 'pay_doc', object: 'payment', status: 'failed', amount: '10.00', asset_code: 'USDC.ETH', metadata: { note: 'Zoë' } },
    });
    const body = (await svc.ctx.database.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [event.id]))[0]!.body;
    const now = Math.floor(Date.now() / 1000);
    const post = (b: string, signature: string) =>
      fetch(url, {
        method: 'POST',
        body: b,
        headers: { 'content-type': 'application/json', [EVENT_ID_HEADER]: event.id, [SIGNATURE_HEADER]: signature },
      }).then((r) => r.status);
    // The stored bytes signed as the sender signs them are accepted (the control) ...
    expect(await post(body!, signPayload(endpoint.secret, now, body!))).toBe(200);
    // ... one changed byte is not,
    expect(await post(body!.replace('10.00', '10.01'), signPayload(endpoint.secret, now, body!))).toBe(400);
    // nor another secret's signature, nor a t more than 300 s away, nor a malformed header.
    expect(await post(body!, signPayload('whsec_someOtherEndpointsSecret', now, body!))).toBe(400);
    // (Whole seconds on both sides and the time between signing and checking make 301 s a
    // coin toss against a 300 s tolerance: 305 s, taken just before sending, is clearly out.)
    const secondsNow = () => Math.floor(Date.now() / 1000);
    expect(await post(body!, signPayload(endpoint.secret, secondsNow() - 305, body!))).toBe(400);
    expect(await post(body!, signPayload(endpoint.secret, secondsNow() + 305, body!))).toBe(400);
    expect(await post(body!, 't=abc,v1=zz')).toBe(400);
  });
});

/**
 * Issue 36 item 1: the Standard Webhooks snippet of docs/webhooks.md, run as it is with the
 * `standardwebhooks` package (so it runs from a folder inside the checkout, where Node finds
 * node_modules), against a real delivery to an endpoint with `standard_webhooks: true`.
 */
describe('docs/webhooks.md snippet: Standard Webhooks libraries (standardwebhooks)', () => {
  let url: string;
  let endpoint: { id: string; secret: string };
  let dir: string;

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}/webhooks`;
    endpoint = (await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'], standard_webhooks: true }))
      .body;
    const cache = fileURLToPath(new URL('../../../../node_modules/.cache', import.meta.url));
    mkdirSync(cache, { recursive: true });
    dir = mkdtempSync(join(cache, 'payhooks-doc-'));
    const file = join(dir, 'receiver.mjs');
    writeFileSync(file, snippet('### Standard Webhooks libraries', 'js'));
    const child = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '', PAYHOOKS_WEBHOOK_SECRET: endpoint.secret, PORT: String(port) },
      stdio: 'ignore',
    });
    children.push(child);
    await until(async () => (await fetch(url, { method: 'POST', body: '{}' })).status === 400, {
      message: 'the Standard Webhooks snippet to start',
    });
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a real delivery from the delivery engine', async () => {
    const { event } = await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded' });
    await svc.ctx.createWorker().drain();
    const r = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${event.id}&endpoint_id=${endpoint.id}`);
    const d = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries/${r.body.data[0].id}`);
    expect(d.body.state).toBe('delivered');
    expect(d.body.attempts[0]).toMatchObject({ status_code: 200, response_body: 'ok' });
    expect(d.body.attempts[0].request_headers['webhook-id']).toBe(event.id);
  });

  it('refuses a tampered body, another secret, a stale timestamp and a request with only the contract headers with 400', async () => {
    const { event } = await publish(svc.ctx, p.merchant_id, { type: 'payment.failed' });
    const body = (await svc.ctx.database.query<{ body: string }>('SELECT body FROM events WHERE id = $1', [event.id]))[0]!.body;
    const key = standardWebhooksKey(endpoint.secret)!;
    const post = (b: string, signer: Buffer, t: number) =>
      fetch(url, {
        method: 'POST',
        body: b,
        headers: {
          'content-type': 'application/json',
          'webhook-id': event.id,
          'webhook-timestamp': String(t),
          'webhook-signature': signStandardWebhooks({ v1: [signer] }, event.id, t, b),
        },
      }).then((r) => r.status);
    const now = () => Math.floor(Date.now() / 1000);
    expect(await post(body, key, now())).toBe(200);
    const other = Buffer.alloc(33, 7);
    expect(await post(body, other, now())).toBe(400);
    const tampered = await fetch(url, {
      method: 'POST',
      body: body.replace('"payment.failed"', '"payment.succeeded"'),
      headers: {
        'webhook-id': event.id,
        'webhook-timestamp': String(now()),
        'webhook-signature': signStandardWebhooks({ v1: [key] }, event.id, now(), body),
      },
    });
    expect(tampered.status).toBe(400);
    expect(await post(body, key, now() - 305)).toBe(400);
    const contractOnly = await fetch(url, {
      method: 'POST',
      body,
      headers: { [EVENT_ID_HEADER]: event.id, [SIGNATURE_HEADER]: signPayload(endpoint.secret, now(), body) },
    });
    expect(contractOnly.status).toBe(400);
  });
});
