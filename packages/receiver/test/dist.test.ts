import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { DIST_DIR, PACKAGE_DIR, ensureDist } from './helpers/build.ts';
import { SECRET, delivery, paymentEvent } from './helpers/events.ts';

const run = promisify(execFile);

beforeAll(async () => {
  await ensureDist();
}, 120_000);

/** A script run by plain Node from the package directory, so `@payhooks/receiver` resolves through its exports map. */
async function node(kind: 'esm' | 'cjs', script: string): Promise<Record<string, unknown>> {
  const args = kind === 'esm' ? ['--input-type=module', '-e', script] : ['--input-type=commonjs', '-e', script];
  const { stdout } = await run(process.execPath, args, { cwd: PACKAGE_DIR, env: { ...process.env, NODE_OPTIONS: '' } });
  return JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
}

function consumerScript(load: string, entry: string, verify: string): string {
  const event = paymentEvent();
  const d = delivery(event);
  const tampered = { ...d, body: d.body.replace('10.00', '10.01') };
  return `
    ${load}
    (async () => {
      const r = ${entry};
      const ok = await r.${verify}({ body: ${JSON.stringify(d.body)}, headers: ${JSON.stringify(d.headers)}, secret: ${JSON.stringify(SECRET)} });
      let reason = null;
      try { await r.${verify}({ body: ${JSON.stringify(tampered.body)}, headers: ${JSON.stringify(d.headers)}, secret: ${JSON.stringify(SECRET)} }); }
      catch (e) { reason = e.reason + ':' + (e instanceof r.WebhookVerificationError); }
      const seen = [];
      const handler = r.createWebhookHandler({ secret: ${JSON.stringify(SECRET)}, store: r.memoryStore(), onEvent: (e) => { seen.push(e.id); } });
      const res = await handler.handle({ body: new TextEncoder().encode(${JSON.stringify(d.body)}), headers: ${JSON.stringify(d.headers)} });
      await handler.drain();
      await handler.close();
      console.log(JSON.stringify({ id: ok.id, reason, status: res.status, seen }));
    })().catch((e) => { console.error(e); process.exit(1); });`;
}

const expected = (o: Record<string, unknown>) => {
  expect(o.reason).toBe('bad_signature:true');
  expect(o.status).toBe(200);
  expect((o.seen as string[]).length).toBe(1);
  expect(o.seen).toEqual([o.id]);
};

describe('the built package (dist)', () => {
  it('spec 5.1: `require("@payhooks/receiver")` (CommonJS) verifies a delivery signed by the server code', async () => {
    expected(await node('cjs', consumerScript('', 'require("@payhooks/receiver")', 'verifyWebhook')));
  });

  it('spec 5.1: `import("@payhooks/receiver")` (ESM) verifies a delivery signed by the server code', async () => {
    expected(await node('esm', consumerScript('', 'await import("@payhooks/receiver")', 'verifyWebhook')));
  });

  it('spec 5.1: `@payhooks/receiver/fetch` (ESM and CommonJS) verifies with WebCrypto', async () => {
    expected(await node('esm', consumerScript('', 'await import("@payhooks/receiver/fetch")', 'verifyWebhookAsync')));
    expected(await node('cjs', consumerScript('', 'require("@payhooks/receiver/fetch")', 'verifyWebhookAsync')));
  });

  it('the fetch entry imports no Node built-in, so it loads on edge runtimes', () => {
    for (const file of ['fetch.js', 'fetch.cjs']) {
      const code = readFileSync(join(DIST_DIR, file), 'utf8');
      expect(code).not.toMatch(/\bfrom\s*["'](node:)?(crypto|http|buffer|fs|net|stream)["']/);
      expect(code).not.toMatch(/\brequire\(\s*["'](node:)?[a-z_]+["']\s*\)/);
      expect(code).not.toMatch(/\bBuffer\./);
    }
  });

  it('has no runtime dependencies: @payhooks/contract is bundled into the JS and the .d.ts', () => {
    const pkg = JSON.parse(readFileSync(join(PACKAGE_DIR, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.dependencies).toBeUndefined();
    for (const file of ['index.js', 'index.cjs', 'fetch.js', 'fetch.cjs', 'index.d.ts', 'index.d.cts', 'fetch.d.ts', 'fetch.d.cts']) {
      expect(readFileSync(join(DIST_DIR, file), 'utf8'), file).not.toContain('@payhooks/contract');
    }
  });

  it('its type declarations resolve and type-check for an ESM and a CommonJS consumer (tsc, module nodenext)', async () => {
    const dir = join(PACKAGE_DIR, `.consumer-check-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    try {
      const use = (mod: string) => `
        const handler = r.createWebhookHandler({
          secret: 'whsec_x', store: r.memoryStore(), types: ['payment.succeeded'],
          onEvent: async (event: r.WebhookEvent, ctx: r.EventContext) => {
            if (r.isPaymentEvent(event)) {
              const amount: string = event.data.object.amount;
              // @ts-expect-error the declarations are real types, not any
              const wrong: number = event.data.object.amount;
              void amount; void wrong;
            }
            void ctx.attempt;
          },
        });
        const reason: r.WebhookVerificationReason = 'bad_signature';
        // @ts-expect-error not a reason code
        const notAReason: r.WebhookVerificationReason = 'nope';
        void reason; void notAReason; void handler; void ${mod};`;
      // The libraries' own types must fit the structural types of the published declarations.
      const libraries = `
        import pg from 'pg';
        import { Redis } from 'ioredis';
        import express from 'express';
        import Fastify from 'fastify';
        const pgs = r.pgStore({ pool: new pg.Pool() });
        void pgs.creditOnce('pay_1', async (tx) => { const client: pg.PoolClient = tx; await client.query('SELECT 1'); return 1; })
          .then((res) => { if (res.credited) { const n: number = res.value; void n; } });
        void r.redisStore({ client: new Redis({ lazyConnect: true }) });
        express().post('/webhooks', r.expressWebhook(handler));
        void Fastify().register(r.fastifyWebhook(handler, { path: '/webhooks' }));
        const e: r.WebhookEvent = r.verifyWebhook({ body: '', headers: {}, secret: 'whsec_x' });
        void e;`;
      writeFileSync(
        join(dir, 'esm.mts'),
        `import * as r from '@payhooks/receiver';\nimport * as f from '@payhooks/receiver/fetch';\n${use('f.toFetchHandler')}\n${libraries}\n`,
      );
      writeFileSync(join(dir, 'cjs.cts'), `import r = require('@payhooks/receiver');\n${use('r.expressWebhook')}\n`);
      writeFileSync(
        join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            module: 'nodenext',
            moduleResolution: 'nodenext',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            types: ['node'],
            lib: ['es2022', 'dom'],
          },
          files: ['esm.mts', 'cjs.cts'],
        }),
      );
      const tsc = join(PACKAGE_DIR, '../../node_modules/typescript/bin/tsc');
      await run(process.execPath, [tsc, '-p', dir]).catch((error: { stdout?: string }) => {
        throw new Error(`tsc failed:\n${error.stdout}`);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
