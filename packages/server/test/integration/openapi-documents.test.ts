import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TYPES, WILDCARD_EVENT_TYPE } from '@payhooks/contract';
import { startService, type TestService } from '../helpers/service.ts';
import { routesOf } from '../../src/api/app.ts';
import { isBrowserPage } from '../../src/api/openapi/overlays.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const REDOCLY = join(ROOT, 'node_modules/.bin/redocly');
const INTERNAL_TOKEN = 'openapi-documents-test-internal-token-0123456789';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

type Doc = any;
let svc: TestService;
let p: CreatedPlatform;
let docs: { public: Doc; operator: Doc; portal: Doc };

beforeAll(async () => {
  svc = await startService({ internalToken: INTERNAL_TOKEN, rateLimitPerSecond: 1_000_000, rateLimitBurst: 1_000_000 });
  p = await svc.platform();
  const get = async (path: string) => {
    const res = await fetch(svc.url + path);
    expect(res.status, path).toBe(200);
    return res.json();
  };
  docs = {
    public: await get('/api/v1/openapi.json'),
    operator: await get('/internal/v1/openapi.json'),
    portal: await get('/portal/api/openapi.json'),
  };
});
afterAll(async () => svc?.close());

function operations(doc: Doc): Array<{ path: string; method: string; op: Doc }> {
  return Object.entries<Doc>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] })),
  );
}

/** `/api/v1/webhook_endpoints/:id` -> `/api/v1/webhook_endpoints/{id}`. */
const documentedPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

describe('the OpenAPI documents', () => {
  it("issue 22: the portal's JSON API (replay, resend, bulk replay) is not public API: it is in the portal page's own, unlinked document", () => {
    expect(Object.keys(docs.public.paths).filter((p) => p.startsWith('/portal'))).toEqual([]);
    expect(JSON.stringify(docs.public)).not.toContain('/portal/api/openapi.json');
    const portalPaths = Object.keys(docs.portal.paths);
    for (const p of ['/portal/api/deliveries/{id}/replay', '/portal/api/deliveries/{id}/resend', '/portal/api/endpoints/{id}/bulk_replays'])
      expect(portalPaths).toContain(p);
    expect(portalPaths.every((p) => p.startsWith('/portal/'))).toBe(true);
    expect(docs.portal.info.description).toContain('not a public API');
  });

  it('pass `redocly lint` with no error and no warning (redocly.yaml: recommended-strict)', { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payhooks-openapi-'));
    try {
      const files = [join(dir, 'public.json'), join(dir, 'operator.json'), join(dir, 'portal.json')];
      await writeFile(files[0]!, JSON.stringify(docs.public, null, 2));
      await writeFile(files[1]!, JSON.stringify(docs.operator, null, 2));
      await writeFile(files[2]!, JSON.stringify(docs.portal, null, 2));
      for (const file of files) {
        // One file per run: the JSON format prints one report per run.
        const run = await promisify(execFile)(REDOCLY, ['lint', file, '--config', join(ROOT, 'redocly.yaml'), '--format', 'json'], {
          cwd: dir,
          maxBuffer: 64 * 1024 * 1024,
        }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
        const start = run.stdout.indexOf('{');
        expect(start, `redocly printed no report: ${run.stderr}`).toBeGreaterThanOrEqual(0);
        const report = JSON.parse(run.stdout.slice(start)) as {
          totals: { errors: number; warnings: number };
          problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }>;
        };
        const problems = report.problems.map((x) => `${x.ruleId}: ${x.message} at ${x.location[0]?.pointer}`);
        expect([file, problems]).toEqual([file, []]);
        expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('list every route of the app in exactly one of the three (browser pages in none), and nothing else', () => {
    const documented = new Set(
      [...operations(docs.public), ...operations(docs.operator), ...operations(docs.portal)].map(
        (o) => `${o.method.toUpperCase()} ${o.path}`,
      ),
    );
    const routes = routesOf(svc.app);
    expect(routes.length).toBeGreaterThan(40);
    const fromRoutes = new Set<string>();
    for (const r of routes) {
      const key = `${r.method} ${documentedPath(r.url)}`;
      const inPublic = Boolean(docs.public.paths[documentedPath(r.url)]?.[r.method.toLowerCase()]);
      const inOperator = Boolean(docs.operator.paths[documentedPath(r.url)]?.[r.method.toLowerCase()]);
      const inPortal = Boolean(docs.portal.paths[documentedPath(r.url)]?.[r.method.toLowerCase()]);
      if (isBrowserPage(r.url)) {
        expect([key, inPublic || inOperator || inPortal], 'a browser page is in no document').toEqual([key, false]);
        continue;
      }
      expect([key, Number(inPublic) + Number(inOperator) + Number(inPortal)], 'in exactly one document').toEqual([key, 1]);
      fromRoutes.add(key);
    }
    expect(
      [...documented].filter((k) => !fromRoutes.has(k)),
      'documented operations without a route',
    ).toEqual([]);
    // The operator document is the operator's: publishing, health, metrics.
    expect(Object.keys(docs.operator.paths).sort()).toEqual([
      '/healthz',
      '/internal/v1/events',
      '/internal/v1/events/batch',
      '/internal/v1/openapi.json',
      '/internal/v1/operator_endpoints',
      '/internal/v1/operator_endpoints/{id}',
      '/internal/v1/operator_endpoints/{id}/deliveries',
      '/internal/v1/operator_endpoints/{id}/rotate_secret',
      '/internal/v1/payments/{id}/transitions',
      '/internal/v1/platforms/{platform_id}/alert_settings',
      '/internal/v1/portal_sessions',
      '/metrics',
      '/readyz',
    ]);
  });

  it('give every operation an operationId, a summary, declared tags, and an example for every response', () => {
    for (const doc of [docs.public, docs.operator]) {
      expect(doc.openapi).toBe('3.1.0');
      expect(JSON.stringify(doc)).not.toMatch(/\bNaN\b|\bundefined\b|Default Response/);
      expect(doc.servers).toEqual([expect.objectContaining({ url: svc.url })]);
      const tags = new Set(doc.tags.map((t: Doc) => t.name));
      for (const { path, method, op } of operations(doc)) {
        const where = `${method.toUpperCase()} ${path}`;
        expect(op.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
        expect(op.summary, where).toBeTruthy();
        expect(
          op.tags.every((t: string) => tags.has(t)),
          where,
        ).toBe(true);
        for (const [status, response] of Object.entries<Doc>(op.responses)) {
          const resolved = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
          expect(resolved.description, `${where} ${status}`).toBeTruthy();
          for (const media of Object.values<Doc>(resolved.content ?? {}))
            expect(media.example ?? media.examples, `${where} ${status} example`).toBeDefined();
        }
      }
    }
  });

  it('describe the event envelope, Payment and the event-type catalog as real schemas, the enum everywhere a type appears', () => {
    const s = docs.public.components.schemas;
    expect(s.EventType.enum).toEqual([...EVENT_TYPES]);
    expect(s.EnabledEventType.enum).toEqual([WILDCARD_EVENT_TYPE, ...EVENT_TYPES]);
    expect(Object.keys(s.Event.properties)).toEqual([
      'id',
      'object',
      'type',
      'api_version',
      'environment',
      'merchant_id',
      'created_at',
      'data',
    ]);
    expect(s.Event.properties.type).toEqual({ $ref: '#/components/schemas/EventType' });
    expect(s.Event.properties.data.properties.object.oneOf).toEqual([
      { $ref: '#/components/schemas/Payment' },
      { $ref: '#/components/schemas/CheckoutSession' },
      { $ref: '#/components/schemas/WebhookEndpoint' },
    ]);
    expect(s.Payment.properties.status.enum ?? s.Payment.properties.status.anyOf.map((b: Doc) => b.enum?.[0] ?? b.const)).toContain(
      'succeeded',
    );
    for (const name of ['CheckoutSession', 'WebhookEndpoint', 'WebhookEndpointWithSecret', 'WebhookDelivery', 'DeliveryAttempt', 'Error'])
      expect(Object.keys(s[name].properties ?? {}).length, name).toBeGreaterThan(0);
    expect(s.WebhookEndpoint.properties.enabled_events.items).toEqual({ $ref: '#/components/schemas/EnabledEventType' });
    const body = (path: string, method = 'post') => docs.public.paths[path][method].requestBody.content['application/json'].schema;
    expect(body('/api/v1/webhook_endpoints').properties.enabled_events.items).toEqual({ $ref: '#/components/schemas/EnabledEventType' });
    expect(body('/api/v1/webhook_endpoints/{id}', 'patch').properties.enabled_events.items).toEqual({
      $ref: '#/components/schemas/EnabledEventType',
    });
    expect(body('/api/v1/listen_sessions').properties.enabled_events.items).toEqual({ $ref: '#/components/schemas/EnabledEventType' });
    const typeParam = docs.public.paths['/api/v1/events'].get.parameters.find((x: Doc) => x.name === 'type');
    expect(typeParam.schema.enum).toEqual([...EVENT_TYPES]);
    const publish = docs.operator.paths['/internal/v1/events'].post;
    expect(publish.requestBody.content['application/json'].schema.properties.type).toEqual({ $ref: '#/components/schemas/EventType' });
    expect(docs.operator.components.schemas.EventType.enum).toEqual([...EVENT_TYPES]);
    // The batch: each event the same shape, its key required, a result each.
    const batch = docs.operator.paths['/internal/v1/events/batch'].post;
    const item = batch.requestBody.content['application/json'].schema.properties.events.items;
    expect(item.properties.type).toEqual({ $ref: '#/components/schemas/EventType' });
    expect(item.required).toContain('idempotency_key');
    expect(batch.requestBody.content['application/json'].schema.properties.events.maxItems).toBe(100);
  });

  it('declare the Idempotency-Key, Idempotent-Replayed and Retry-After headers, the security schemes, and 201 where 201 happens', () => {
    const pub = docs.public;
    expect(pub.components.parameters.IdempotencyKey).toMatchObject({ name: 'Idempotency-Key', in: 'header' });
    const create = pub.paths['/api/v1/webhook_endpoints'].post;
    expect(Object.keys(create.responses)).toContain('201');
    expect(Object.keys(create.responses)).not.toContain('200');
    expect(create.parameters).toContainEqual({ $ref: '#/components/parameters/IdempotencyKey' });
    expect(create.responses['201'].headers['Idempotent-Replayed']).toEqual({ $ref: '#/components/headers/IdempotentReplayed' });
    for (const name of ['TooManyRequests', 'Unavailable'])
      expect(pub.components.responses[name].headers['Retry-After']).toEqual({ $ref: '#/components/headers/RetryAfter' });
    expect(docs.operator.paths['/readyz'].get.responses['503'].headers['Retry-After']).toBeDefined();
    expect(docs.operator.paths['/internal/v1/events'].post.responses['201'].headers['Idempotent-Replayed']).toEqual({
      $ref: '#/components/headers/IdempotentReplayed',
    });
    expect(Object.keys(pub.components.securitySchemes)).toEqual(['bearerAuth']);
    expect(Object.keys(docs.portal.components.securitySchemes)).toEqual(['portalSession']);
    expect(docs.portal.components.securitySchemes.portalSession).toMatchObject({ type: 'apiKey', in: 'cookie' });
    expect(Object.keys(docs.operator.components.securitySchemes)).toEqual(['internalToken']);
    for (const [path, method] of [
      ['/api/v1/payments', 'post'],
      ['/api/v1/checkout_sessions', 'post'],
    ] as const)
      expect(Object.keys(pub.paths[path][method].responses), path).toContain('201');
  });

  it('declare the statuses the app really answers: 401 without credentials, 415 for a non-JSON body, 403 for a portal change from another origin', async () => {
    const probes: Array<{ where: string; status: number; declared: string[] }> = [];
    const idFor = (path: string) => path.replace(/\{[^}]+\}/g, 'x_123');
    for (const doc of [docs.public, docs.operator, docs.portal]) {
      for (const { path, method, op } of operations(doc)) {
        if (!op.security?.length) continue; // open routes (health, documents, sign-in, relay)
        const declared = Object.keys(op.responses);
        const url = svc.url + idFor(path);
        const noCredentials = await fetch(url, {
          method: method.toUpperCase(),
          ...(method === 'get' ? {} : { headers: { origin: svc.url, 'content-type': 'application/json' }, body: '{}' }),
        });
        probes.push({ where: `${method.toUpperCase()} ${path} without credentials`, status: noCredentials.status, declared });
        if (method !== 'get') {
          const auth = path.startsWith('/internal/') ? `Bearer ${INTERNAL_TOKEN}` : `Bearer ${p.keys.sandbox}`;
          const headers: Record<string, string> = { 'content-type': 'text/plain', authorization: auth };
          if (path.startsWith('/portal/')) headers.origin = 'https://elsewhere.example';
          const res = await fetch(url, { method: method.toUpperCase(), headers, body: 'x' });
          probes.push({ where: `${method.toUpperCase()} ${path} with a text/plain body`, status: res.status, declared });
        }
      }
    }
    expect(probes.length).toBeGreaterThan(40);
    expect(probes.filter((x) => !x.declared.includes(String(x.status)))).toEqual([]);
    // And the probes hit what they were meant to.
    expect(new Set(probes.filter((x) => x.where.endsWith('without credentials')).map((x) => x.status))).toEqual(new Set([401]));
    expect(
      new Set(probes.filter((x) => x.where.endsWith('text/plain body') && x.where.includes(' /portal/')).map((x) => x.status)),
    ).toEqual(new Set([403]));
    expect(new Set(probes.filter((x) => x.where.endsWith('text/plain body') && x.where.includes(' /api/')).map((x) => x.status))).toEqual(
      new Set([415]),
    );
  });
});
