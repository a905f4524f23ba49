import { afterAll, describe, expect, it } from 'vitest';
import express from 'express';
import Fastify from 'fastify';
import {
  createWebhookHandler,
  expressWebhook,
  fastifyWebhook,
  memoryStore,
  toFetchHandler,
  toNodeHandler,
  type WebhookEvent,
  type WebhookHandler,
} from '../src/index.ts';
import * as edge from '../src/fetch.ts';
import { SECRET, delivery, paymentEvent } from './helpers/events.ts';
import { fetchBridge, listen, post } from './helpers/http.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

function receiver(create = createWebhookHandler) {
  const events: WebhookEvent[] = [];
  const handler = create({ secret: SECRET, store: memoryStore(), onEvent: (e) => void events.push(e) });
  cleanups.push(() => handler.close());
  return { handler, events };
}

/** The checks every adapter must pass with a real HTTP request. */
async function exercise(url: string, handler: WebhookHandler, events: WebhookEvent[]) {
  // A genuine delivery, with non-ASCII metadata to catch any decoding of the raw bytes.
  const event = paymentEvent({}, { metadata: { customer: 'Zoë Ünal', emoji: '💸' } });
  const d = delivery(event);
  const ok = await post(url, d.body, d.headers);
  expect(ok.status).toBe(200);
  expect(ok.json()).toEqual({ received: true });
  await handler.drain();
  expect(events.map((e) => e.id)).toEqual([event.id]);
  expect(events[0]).toEqual(event);
  // Spec 5.1.7: a forged or stale delivery is answered 400 and not processed.
  const forged = await post(url, d.body.replace('10.00', '1000.00'), { ...d.headers, 'service-event-id': event.id });
  expect(forged.status).toBe(400);
  expect(forged.json().error).toBe('bad_signature');
  const stale = delivery(paymentEvent(), { timestamp: Math.floor(Date.now() / 1000) - 301 });
  expect((await post(url, stale.body, stale.headers)).json().error).toBe('timestamp_out_of_tolerance');
  // Spec 6.2.1: the duplicate is answered 200.
  expect((await post(url, d.body, d.headers)).json()).toMatchObject({ duplicate: true });
  await handler.drain();
  expect(events).toHaveLength(1);
}

describe('adapters verify real HTTP requests', () => {
  it('spec 5.1.4: node:http, toNodeHandler reads the raw body itself', async () => {
    const { handler, events } = receiver();
    const server = await listen(toNodeHandler(handler, { maxBodyBytes: 64 * 1024 }));
    cleanups.push(server.close);
    await exercise(server.url, handler, events);
    expect((await fetch(server.url)).status).toBe(405);
    const big = await post(server.url, 'x'.repeat(65 * 1024), { 'content-type': 'application/json' });
    expect(big.status).toBe(413);
  });

  it('spec 5.1.4: Express, route mounted before express.json(); the rest of the app keeps its JSON parser', async () => {
    const { handler, events } = receiver();
    const app = express();
    app.post('/webhooks/payhooks', expressWebhook(handler));
    app.use(express.json());
    app.post('/api/echo', (req, res) => void res.json({ parsed: req.body }));
    const server = await listen(app);
    cleanups.push(server.close);
    await exercise(`${server.url}/webhooks/payhooks`, handler, events);
    expect((await post(`${server.url}/api/echo`, '{"a":1}', { 'content-type': 'application/json' })).json()).toEqual({
      parsed: { a: 1 },
    });
  });

  it('spec 5.1.4: Express with express.raw() on the route (the body arrives as a Buffer)', async () => {
    const { handler, events } = receiver();
    const app = express();
    app.post('/webhooks/payhooks', express.raw({ type: '*/*' }), expressWebhook(handler));
    app.use(express.json());
    const server = await listen(app);
    cleanups.push(server.close);
    await exercise(`${server.url}/webhooks/payhooks`, handler, events);
  });

  it('spec 5.1.4: Express with express.json() in front: refuses to verify re-serialised JSON, 500 with the fix, nothing processed', async () => {
    const { handler, events } = receiver();
    const app = express();
    app.use(express.json());
    app.post('/webhooks/payhooks', expressWebhook(handler));
    app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).json({ error: error.message });
    });
    const server = await listen(app);
    cleanups.push(server.close);
    const d = delivery(paymentEvent());
    const response = await post(`${server.url}/webhooks/payhooks`, d.body, d.headers);
    expect(response.status).toBe(500);
    expect(String(response.json().error)).toMatch(/already parsed.*express\.json\(\)/s);
    await handler.drain();
    expect(events).toEqual([]);
  });

  it('spec 5.1.4: Fastify plugin, raw body in its own context; other routes keep the JSON parser', async () => {
    const { handler, events } = receiver();
    const app = Fastify();
    await app.register(fastifyWebhook(handler, { path: '/webhooks/payhooks' }));
    app.post('/api/echo', async (request) => ({ parsed: request.body }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    cleanups.push(() => app.close());
    const address = app.server.address() as { port: number };
    const url = `http://127.0.0.1:${address.port}`;
    await exercise(`${url}/webhooks/payhooks`, handler, events);
    expect((await post(`${url}/api/echo`, '{"a":1}', { 'content-type': 'application/json' })).json()).toEqual({
      parsed: { a: 1 },
    });
  });

  it('spec 5.1.4: Fetch API Request -> Response with WebCrypto only (the edge entry), passing waitUntil', async () => {
    const { handler, events } = receiver(edge.createWebhookHandler);
    const waited: Promise<unknown>[] = [];
    const fetchHandler = edge.toFetchHandler(handler);
    const server = await listen(fetchBridge((request) => fetchHandler(request, { waitUntil: (p: Promise<unknown>) => waited.push(p) })));
    cleanups.push(server.close);
    await exercise(server.url, handler, events);
    expect(waited).toHaveLength(1); // the one accepted delivery's work
    expect((await fetch(server.url)).status).toBe(405);
  });

  it('spec 5.1.4: Fetch API handler from the Node entry works the same (Hono or Next.js on Node)', async () => {
    const { handler, events } = receiver();
    const server = await listen(fetchBridge(toFetchHandler(handler)));
    cleanups.push(server.close);
    await exercise(server.url, handler, events);
  });
});
