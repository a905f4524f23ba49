import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Channel } from 'amqplib';
import { fanoutExchange, type FanoutExchange } from '../helpers/rabbit.ts';
import { startService, type TestService } from '../helpers/service.ts';
import { startReceiver, type TestReceiver } from '../helpers/receiver.ts';
import { startTracing, stopTracing, tracing } from '../../src/telemetry/tracing.ts';
import type { CreatedPlatform } from '../../src/tenancy/platforms.ts';

/**
 * Issue 25 item 4: OpenTelemetry traces, set up only by OTEL_* variables, exported over OTLP/HTTP
 * to a real local sink (an HTTP server on port 0, as a collector would be). One payment created
 * through the API under a caller's trace, delivered by the worker to an HTTP receiver and to
 * RabbitMQ: the spans (request, publish, claim, attempt, record), their parents and links, and
 * the traceparent each delivery carried.
 */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: string | number; boolValue?: boolean } }>;
  links?: Array<{ traceId: string; spanId: string }>;
  status?: { code?: number; message?: string };
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
}

const posts: Array<{ contentType: string; body: Buffer }> = [];
let sink: Server;
let sinkUrl: string;

async function startSink() {
  sink = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces') posts.push({ contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
}

/** Every span the sink received as OTLP/JSON. */
function jsonSpans(): Array<OtlpSpan & { service: string }> {
  const out: Array<OtlpSpan & { service: string }> = [];
  for (const p of posts.filter((x) => x.contentType.startsWith('application/json'))) {
    const doc = JSON.parse(p.body.toString('utf8'));
    for (const rs of doc.resourceSpans ?? []) {
      const service = rs.resource.attributes.find((a: { key: string }) => a.key === 'service.name')?.value.stringValue;
      for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) out.push({ ...s, service });
    }
  }
  return out;
}

const attr = (s: OtlpSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.boolValue);
};

const UPSTREAM_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const UPSTREAM = `00-${UPSTREAM_TRACE}-00f067aa0ba902b7-01`;
const saved = { ...process.env };

let svc: TestService;
let p: CreatedPlatform;
let receiver: TestReceiver;
let exchange: FanoutExchange;
let ch: Channel;
let EXCHANGE: string;

beforeAll(async () => {
  await startSink();
  exchange = await fanoutExchange('payhooks-trace');
  ({ channel: ch, name: EXCHANGE } = exchange);
});
// A test that failed half-way leaves neither its service nor its tracing to the next one.
afterEach(async () => {
  await svc?.close();
  svc = undefined as unknown as TestService;
  await stopTracing();
});
afterAll(async () => {
  await stopTracing();
  process.env = saved;
  await svc?.close();
  await receiver?.close();
  await exchange?.close();
  await new Promise((r) => sink?.close(r));
});

describe('OTLP/HTTP JSON (OTEL_EXPORTER_OTLP_PROTOCOL=http/json)', () => {
  it('exports the request, publish, claim, attempt and record spans; the attempt links to the publish and its traceparent reaches the receiver and the broker', async () => {
    Object.assign(process.env, {
      OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'payhooks-test',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    expect((await startTracing()).enabled).toBe(true);
    svc = await startService({ allowPrivateUrls: true });
    p = await svc.platform();
    receiver = await startReceiver(() => ({ status: 200 }));
    const worker = svc.ctx.createWorker();
    for (const url of [receiver.url, `amqp://127.0.0.1:5672/?exchange=${EXCHANGE}`]) {
      const e = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', { url, enabled_events: ['*'] });
      expect(e.status, JSON.stringify(e.body)).toBe(201);
    }
    const pay = await svc.api(
      p.keys.sandbox,
      'POST',
      '/api/v1/payments',
      { amount: '25.00', asset_code: 'USDC.ETH', metadata: { order: 'o1' } },
      { traceparent: UPSTREAM },
    );
    expect(pay.status, JSON.stringify(pay.body)).toBe(201);
    await worker.drain();
    await receiver.waitFor(1);
    const msg = await vi.waitFor(
      async () => {
        const m = await ch.get(EXCHANGE, { noAck: true });
        if (!m) throw new Error('no message yet');
        return m;
      },
      { timeout: 20_000, interval: 50 },
    );
    await tracing.flush();

    const spans = await vi.waitFor(
      () => {
        // Every span the assertions below read, not only the last one made: under load an
        // export can arrive in pieces.
        const all = jsonSpans();
        for (const name of ['record', 'claim', 'POST', `publish ${EXCHANGE}/`, 'POST /api/v1/payments'])
          expect(all.map((s) => s.name)).toContain(name);
        return all;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['payhooks-test']));

    // The API request continues the caller's trace; the publish is its child.
    const request = spans.find((s) => s.name === 'POST /api/v1/payments')!;
    expect(request).toBeDefined();
    expect(request.kind).toBe(2); // SERVER
    expect(request.traceId).toBe(UPSTREAM_TRACE);
    expect(request.parentSpanId).toBe('00f067aa0ba902b7');
    expect(attr(request, 'http.response.status_code')).toBe(201);
    const publish = spans.find((s) => s.name.startsWith('publish payment.') && s.traceId === UPSTREAM_TRACE)!;
    expect(publish).toBeDefined();
    expect(publish.kind).toBe(4); // PRODUCER
    expect(publish.parentSpanId).toBe(request.spanId);
    expect(attr(publish, 'payhooks.event.deliveries')).toBe(2);
    const eventId = attr(publish, 'payhooks.event.id');

    // Each attempt: its own trace, linked to the publish; the HTTP one a client span with the status.
    const attempts = spans.filter((s) => attr(s, 'payhooks.event.id') === eventId && s !== publish);
    const http = attempts.find((s) => s.name === 'POST')!;
    expect(http.kind).toBe(3); // CLIENT
    expect(attr(http, 'http.response.status_code')).toBe(200);
    expect(attr(http, 'url.full')).toBe(receiver.url.split('?')[0]);
    expect(http.links).toEqual([expect.objectContaining({ traceId: publish.traceId, spanId: publish.spanId })]);
    expect(http.parentSpanId ?? '').toBe('');
    const got = receiver.requests.find((r) => r.headers['service-event-id'] === eventId)!;
    expect(got.headers.traceparent).toBe(`00-${http.traceId}-${http.spanId}-01`);

    const amqp = attempts.find((s) => s.name === `publish ${EXCHANGE}/`)!;
    expect(amqp.kind).toBe(4); // PRODUCER
    expect(attr(amqp, 'messaging.system')).toBe('rabbitmq');
    expect(amqp.links).toEqual([expect.objectContaining({ spanId: publish.spanId })]);
    expect((msg.properties.headers as Record<string, string>).traceparent).toBe(`00-${amqp.traceId}-${amqp.spanId}-01`);

    // The attempt log lists the headers each attempt was sent with, its traceparent among them.
    const log = await svc.api(p.keys.sandbox, 'GET', `/api/v1/webhook_deliveries?event_id=${eventId}`);
    const sent = Object.fromEntries(
      (log.body.data as Array<{ endpoint_id: string; attempts: Array<{ request_headers: Record<string, string> }> }>).map((d) => [
        d.attempts[0]!.request_headers['User-Agent'] ? 'http' : 'amqp',
        d.attempts[0]!.request_headers,
      ]),
    );
    expect(sent.http!.traceparent).toBe(got.headers.traceparent);
    expect(sent.amqp!.traceparent).toBe((msg.properties.headers as Record<string, string>).traceparent);

    expect(spans.some((s) => s.name === 'claim' && Number(attr(s, 'payhooks.claim.rows')) >= 1)).toBe(true);
    // drain() ended with a claim that found nothing: claims that find nothing export no span.
    expect(spans.filter((s) => s.name === 'claim').map((s) => Number(attr(s, 'payhooks.claim.rows')))).not.toContain(0);
    // Made after the fact, a claim span still covers the statement: it starts before it ends.
    for (const c of spans.filter((s) => s.name === 'claim'))
      expect(BigInt(c.endTimeUnixNano ?? '0') - BigInt(c.startTimeUnixNano ?? '0')).toBeGreaterThan(0n);
    expect(spans.some((s) => s.name === 'record' && Number(attr(s, 'payhooks.record.outcomes')) >= 1)).toBe(true);

    // A failing attempt is an error span with the error kind.
    const down = await svc.api(p.keys.sandbox, 'POST', '/api/v1/webhook_endpoints', {
      url: `amqp://127.0.0.1:5672/?exchange=no-such-exchange-${EXCHANGE}`,
      enabled_events: ['payment.created'],
    });
    expect(down.status).toBe(201);
    await svc.api(p.keys.sandbox, 'POST', '/api/v1/payments', { amount: '1.00', asset_code: 'USDC.ETH', metadata: {} });
    await worker.drain();
    await tracing.flush();
    await vi.waitFor(
      () => {
        const failed = jsonSpans().find((s) => s.name === `publish no-such-exchange-${EXCHANGE}/`);
        expect(failed?.status?.code).toBe(2); // ERROR
        expect(attr(failed!, 'error.type')).toBe('broker');
      },
      { timeout: 20_000, interval: 100 },
    );
    await svc.close();
    svc = undefined as unknown as TestService;
    await stopTracing();
  });
});

describe('OTLP/HTTP protobuf (the default protocol)', () => {
  it('exports application/x-protobuf to OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces', async () => {
    process.env = { ...saved, OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl, OTEL_SERVICE_NAME: 'payhooks-proto', OTEL_BSP_SCHEDULE_DELAY: '100' };
    posts.length = 0;
    expect((await startTracing()).enabled).toBe(true);
    svc = await startService({ allowPrivateUrls: true });
    const platform = await svc.platform();
    const r = await svc.api(platform.keys.sandbox, 'GET', '/api/v1/webhook_endpoints');
    expect(r.status).toBe(200);
    await tracing.flush();
    await vi.waitFor(
      () => {
        const proto = posts.filter((x) => x.contentType === 'application/x-protobuf');
        expect(proto.length).toBeGreaterThan(0);
        const bytes = Buffer.concat(proto.map((x) => x.body));
        // Protobuf keeps strings as they are: the service name and the route's span name.
        expect(bytes.includes('payhooks-proto')).toBe(true);
        expect(bytes.includes('GET /api/v1/webhook_endpoints')).toBe(true);
      },
      { timeout: 20_000, interval: 100 },
    );
    await stopTracing();
  });
});
