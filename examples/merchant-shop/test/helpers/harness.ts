import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { expect } from 'vitest';
import { ensureDist } from '../../../../packages/receiver/test/helpers/build.ts';
import { createPgDatabase, ADMIN_URL } from '../../../../packages/server/test/helpers/database.ts';
import { startService, type TestService } from '../../../../packages/server/test/helpers/service.ts';
import type { CreatedPlatform } from '../../../../packages/server/src/tenancy/platforms.ts';
import type { DeliveryWorker } from '../../../../packages/server/src/delivery/worker.ts';
import { until } from '../../../../packages/server/test/helpers/wait.ts';

interface Shop {
  app: (req: IncomingMessage, res: import('node:http').ServerResponse) => void;
  webhooks: { drain(): Promise<void>; close(): Promise<void> };
  close(): Promise<void>;
}

/** What reached the shop's webhook route, in order, and how the test let it through. */
export interface WebhookHit {
  eventId: string;
  status: number;
}

/**
 * A real payhooks service (on its own PostgreSQL database, a short retry schedule) and the shop in
 * front of it on its own, fresh PostgreSQL database, both on 127.0.0.1:0. The shop's endpoint is
 * registered through the API like a merchant would. The test sits between payhooks and the shop's
 * webhook route only to count deliveries and, when a test says so, to answer 503 instead of the
 * shop (a receiver that is down).
 */
export interface Harness {
  svc: TestService;
  platform: CreatedPlatform;
  key: string;
  endpoint: { id: string; secret: string };
  shopUrl: string;
  /** The shop's own database. */
  pool: pg.Pool;
  shop: Shop;
  webhookHits: WebhookHit[];
  /** true: the shop's webhook route answers 503 without the shop seeing the request. */
  setWebhooksDown(down: boolean): void;
  /**
   * Holds the browser's return (`GET /success`) in front of the shop until `gate` resolves, then
   * passes it on; rejections are kept for `returnGateErrors`. null: no hold. (A Playwright route
   * can't do this: it never sees the request a 303 redirect leads to.)
   */
  holdReturns(gate: (() => Promise<void>) | null): void;
  returnGateErrors: unknown[];
  /** Starts a delivery worker (the payhooks worker process); stop it with `stopWorker`. */
  startWorker(): Promise<void>;
  stopWorker(): Promise<void>;
  api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;
  ledgerOf(orderId: string): Promise<Array<{ order_id: string; payment_id: string; amount: string; asset_code: string; source: string }>>;
  order(where: {
    checkoutSessionId?: string;
    id?: string;
  }): Promise<{ id: string; status: string; payment_id: string; checkout_session_id: string; amount: string; asset_code: string }>;
  /** The id of the event of `type` about `objectId` (a payment or session), once published. */
  eventFor(type: string, objectId: string): Promise<string>;
  /** That event's deliveries to the shop's endpoint. */
  deliveriesOf(
    eventId: string,
  ): Promise<Array<{ id: string; state: string; attempts: Array<{ status_code: number | null; trigger: string }> }>>;
  close(): Promise<void>;
}

export const RETRY_SCHEDULE_MS = [100, 100, 100, 100, 100, 100, 100];

/** `doubleDelivery`: the shop creates its checkout sessions with the sandbox's double-delivery case. */
export async function startHarness(options: { doubleDelivery?: boolean } = {}): Promise<Harness> {
  await ensureDist(); // the shop imports @payhooks/receiver as published: from dist
  // The shop listens on 127.0.0.1: allow private targets (development mode does the same).
  const svc = await startService({ allowPrivateUrls: true, retryScheduleMs: RETRY_SCHEDULE_MS });
  const platform = await svc.platform('Shop Platform');
  const key = platform.keys.sandbox;
  const shopDb = await createPgDatabase(ADMIN_URL, 'merchant_shop_test');
  const pool = new pg.Pool({ connectionString: shopDb.url, max: 10 });
  // Dropping the database at the end (WITH FORCE) ends connections that are still closing.
  pool.on('error', () => {});

  let shop: Shop | undefined;
  let webhooksDown = false;
  let returnGate: (() => Promise<void>) | null = null;
  const returnGateErrors: unknown[] = [];
  const webhookHits: WebhookHit[] = [];
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/webhooks/')) {
      const eventId = String(req.headers['service-event-id'] ?? '');
      res.on('finish', () => webhookHits.push({ eventId, status: res.statusCode }));
      if (webhooksDown) {
        req.resume();
        res.statusCode = 503;
        res.end('held back by the test');
        return;
      }
    }
    if (!shop) {
      res.statusCode = 503;
      res.end('starting');
      return;
    }
    const gate = req.url?.startsWith('/success') ? returnGate : null;
    if (!gate) return shop.app(req, res);
    gate()
      .catch((error) => returnGateErrors.push(error))
      .then(() => shop!.app(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const shopUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const api = async (method: string, path: string, body?: unknown) => {
    const r = await svc.api(key, method, path, body);
    return { status: r.status, body: r.body };
  };
  const created = await api('POST', '/api/v1/webhook_endpoints', {
    url: `${shopUrl}/webhooks/payhooks`,
    enabled_events: ['payment.succeeded', 'checkout_session.expired'],
  });
  expect(created.status).toBe(201);
  const endpoint = { id: created.body.id as string, secret: created.body.secret as string };

  const { createShop } = await import('../../src/app.js');
  shop = (await createShop({
    pool,
    webhookSecret: endpoint.secret,
    apiKey: key,
    payhooksUrl: svc.url,
    publicUrl: shopUrl,
    doubleDelivery: options.doubleDelivery ?? false,
    retryDelaysMs: [50, 50, 50],
    log: () => {},
  })) as unknown as Shop;

  let worker: DeliveryWorker | null = null;

  return {
    svc,
    platform,
    key,
    endpoint,
    shopUrl,
    pool,
    shop,
    webhookHits,
    setWebhooksDown: (down) => (webhooksDown = down),
    holdReturns: (gate) => (returnGate = gate),
    returnGateErrors,
    async startWorker() {
      if (worker) return;
      worker = svc.ctx.createWorker();
      await worker.start();
    },
    async stopWorker() {
      await worker?.stop();
      worker = null;
    },
    api,
    async ledgerOf(orderId) {
      const { rows } = await pool.query(
        'SELECT order_id, payment_id, amount::text AS amount, asset_code, source FROM ledger_entries WHERE order_id = $1 ORDER BY id',
        [orderId],
      );
      return rows;
    },
    async order({ checkoutSessionId, id }) {
      const { rows } = await pool.query(
        'SELECT id, status, payment_id, checkout_session_id, amount::text AS amount, asset_code FROM orders WHERE checkout_session_id = $1 OR id = $2',
        [checkoutSessionId ?? null, id ?? null],
      );
      expect(rows, 'the shop has the order').toHaveLength(1);
      return rows[0];
    },
    async eventFor(type, objectId) {
      let found: string | undefined;
      await until(
        async () => {
          const r = await api('GET', `/api/v1/events?type=${encodeURIComponent(type)}&limit=100`);
          found = (r.body.data as Array<{ id: string; data: { object: { id: string } } }>).find((e) => e.data.object.id === objectId)?.id;
          return found !== undefined;
        },
        { message: `${type} for ${objectId}` },
      );
      return found!;
    },
    async deliveriesOf(eventId) {
      const r = await api('GET', `/api/v1/webhook_deliveries?event_id=${eventId}&endpoint_id=${endpoint.id}`);
      expect(r.status).toBe(200);
      return r.body.data;
    },
    async close() {
      await worker?.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await shop?.close();
      await pool.end();
      await shopDb.drop();
      await svc.close();
    },
  };
}
