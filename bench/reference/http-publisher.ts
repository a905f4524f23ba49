/**
 * The payment core of the fleet scenarios: a process of its own that publishes over HTTP, as a
 * core in another process or language does, through `POST /internal/v1/events` (one event per
 * request) or `POST /internal/v1/events/batch`. `concurrency` publishers each send one request
 * and wait for its answer before the next, spread round robin over the API processes' URLs.
 * Reports each event's answer time (the commit, as the core sees it) and its own CPU.
 */
import { Agent, request } from 'undici';
import { samplePayment } from './sample-payment.ts';

export interface HttpPublishRequest {
  urls: string[];
  token: string;
  merchantId: string;
  events: number;
  concurrency: number;
  /** Events per request: 0 = one per request to /internal/v1/events; n = batches of n to /events/batch. */
  batch: number;
}

const now = () => performance.timeOrigin + performance.now();
let seq = 0;

function event(merchantId: string, i: number) {
  return {
    type: 'payment.succeeded',
    merchant_id: merchantId,
    environment: 'sandbox',
    data: { object: samplePayment(i) },
    // A core sends a key with every event, so a retry after a lost answer publishes nothing twice.
    idempotency_key: `bench:${process.pid}:${i}`,
  };
}

async function run(req: HttpPublishRequest): Promise<void> {
  const agent = new Agent({ connections: req.concurrency, pipelining: 1 });
  const headers = { authorization: `Bearer ${req.token}`, 'content-type': 'application/json' };
  let pending: [string, number][] = [];
  const flush = () => {
    if (pending.length) process.send!({ type: 'commits', list: pending });
    pending = [];
  };
  const timer = setInterval(flush, 50);
  const cpu0 = process.cpuUsage();
  const t0 = now();
  let next = 0;
  let published = 0;
  let errors = 0;
  let firstError = '';
  let turn = 0;
  await Promise.all(
    Array.from({ length: req.concurrency }, async () => {
      while (next < req.events) {
        const n = req.batch > 0 ? Math.min(req.batch, req.events - next) : 1;
        next += n;
        const url = req.urls[turn++ % req.urls.length]!;
        const events = Array.from({ length: n }, () => event(req.merchantId, seq++));
        const res = await request(req.batch > 0 ? `${url}/internal/v1/events/batch` : `${url}/internal/v1/events`, {
          method: 'POST',
          dispatcher: agent,
          headers,
          body: JSON.stringify(req.batch > 0 ? { events } : events[0]),
        });
        const text = await res.body.text();
        const at = now();
        if (res.statusCode >= 300) {
          errors += n;
          firstError ||= `${res.statusCode} ${text.slice(0, 300)}`;
          continue;
        }
        const parsed = JSON.parse(text) as { id?: string; data?: Array<{ status: number; event?: { id: string } }> };
        const ids = req.batch > 0 ? (parsed.data ?? []).filter((d) => d.status === 201).map((d) => d.event!.id) : [parsed.id!];
        errors += n - ids.length;
        published += ids.length;
        for (const id of ids) pending.push([id, at]);
      }
    }),
  );
  const ms = now() - t0;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(timer);
  flush();
  await agent.close();
  process.send!({ type: 'done', published, errors, firstError, ms, t0, cpu_ms: (cpu.user + cpu.system) / 1000 });
}

process.on('message', (req: HttpPublishRequest) => {
  run(req).catch((err) => process.send!({ type: 'error', message: String(err?.stack ?? err) }));
});
