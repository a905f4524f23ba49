import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { publish } from '../helpers/publish.ts';
import type { DeliveryWorker } from '../../src/delivery/worker.ts';

/**
 * deploy/grafana-dashboard.json is ready to import: it parses, and every payhooks metric and label
 * its queries use is in a real /metrics scrape of a service that has delivered (and failed to
 * deliver) an event. A renamed metric or label breaks this test, not the operator's dashboard.
 */
const DASHBOARD = fileURLToPath(new URL('../../../../deploy/grafana-dashboard.json', import.meta.url));

let svc: TestService;
let worker: DeliveryWorker;
let receiver: TestReceiver;
let scrape: string;

beforeAll(async () => {
  svc = await startService({ allowPrivateUrls: true, allowHttpUrls: true });
  worker = svc.ctx.createWorker();
  receiver = await startReceiver((req) => (req.path.endsWith('/fail') ? { status: 503, body: 'down' } : { status: 200, body: 'ok' }));
  const p = await svc.platform('Dashboard');
  for (const path of ['/webhooks', '/webhooks/fail']) {
    const r = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: receiver.url.replace('/webhooks', path),
      enabled_events: ['*'],
    });
    expect(r.status).toBe(201);
  }
  await publish(svc.ctx, p.merchant_id, { type: 'payment.succeeded', environment: 'sandbox' });
  await worker.drain();
  const res = await fetch(`${svc.url}/metrics`);
  expect(res.status).toBe(200);
  scrape = await res.text();
}, 180_000);
afterAll(async () => {
  await receiver?.close();
  await svc?.close();
});

interface Panel {
  title: string;
  datasource: { uid: string };
  targets: Array<{ expr: string; datasource: { uid: string } }>;
}

/** Sample lines of the scrape: metric name -> the label names seen on it. */
function samples(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^}]*)\})? /.exec(line);
    if (!m) continue;
    const labels = out.get(m[1]!) ?? new Set<string>();
    for (const [, name] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="/g)) labels.add(name!);
    out.set(m[1]!, labels);
  }
  return out;
}

describe('deploy/grafana-dashboard.json', () => {
  it("parses, has panels with Prometheus queries, all on the dashboard's datasource variable", () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      uid: string;
      title: string;
      panels: Panel[];
      templating: { list: Array<{ name: string; type: string }> };
    };
    expect(dashboard.uid).toBeTruthy();
    expect(dashboard.templating.list).toContainEqual(expect.objectContaining({ name: 'datasource', type: 'datasource' }));
    expect(dashboard.panels.length).toBeGreaterThanOrEqual(8);
    for (const panel of dashboard.panels) {
      expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      // Grafana's datasource variable, literally.
      const DATASOURCE = ['$', '{datasource}'].join('');
      expect(panel.datasource.uid, panel.title).toBe(DATASOURCE);
      for (const t of panel.targets) expect(t.datasource.uid, panel.title).toBe(DATASOURCE);
    }
  });

  it('every metric and label its queries use is in a real /metrics scrape', () => {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
    const scraped = samples(scrape);
    const used = new Set<string>();
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        // metric{label="…"} selectors
        for (const [, metric, selector] of expr.matchAll(/\b(payhooks_[a-z_]+)(?:\{([^}]*)\})?/g)) {
          used.add(metric!);
          expect(scraped.has(metric!), `${panel.title}: ${metric} is not in the scrape`).toBe(true);
          for (const [, label] of (selector ?? '').matchAll(/([a-z_]+)\s*=~?/g)) {
            expect(scraped.get(metric!)!.has(label!), `${panel.title}: ${metric} has no label ${label}`).toBe(true);
          }
          // `sum by (x) (… metric …)`: x must be a label of that metric
          for (const [, by] of expr.matchAll(/by \(([^)]*)\)/g)) {
            for (const label of by!.split(',').map((s) => s.trim())) {
              expect(scraped.get(metric!)!.has(label), `${panel.title}: ${metric} has no label ${label}`).toBe(true);
            }
          }
        }
      }
    }
    // Every metric payhooks exports is on the dashboard (histogram parts count as their histogram).
    const exported = [...scrape.matchAll(/^# TYPE (payhooks_[a-z_]+) /gm)].map((m) => m[1]!);
    expect(exported.length).toBeGreaterThanOrEqual(7);
    for (const name of exported) {
      expect(
        [...used].some((u) => u === name || u.startsWith(`${name}_`)),
        `${name} has no panel`,
      ).toBe(true);
    }
  });

  it('the scrape it was checked against had real deliveries: a succeeded and a failed attempt', () => {
    expect(scrape).toMatch(/payhooks_delivery_attempts_total\{outcome="succeeded",error_kind="none"\} 1/);
    expect(scrape).toMatch(/payhooks_delivery_attempts_total\{outcome="failed",error_kind="http_status"\} 1/);
    expect(scrape).toMatch(/payhooks_delivery_attempt_duration_seconds_bucket\{le="\+Inf",outcome="succeeded"\} 1/);
  });
});
