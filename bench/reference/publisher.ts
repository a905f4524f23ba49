/**
 * The publisher process of the reference benchmark: publishes events the way the payment
 * service would, in a process of its own, and reports each event's commit time to the parent.
 *
 * target 'payhooks': `publishEvent` in a transaction (the outbox; endpoints fan out inside).
 * target 'payhooks-sql': the SQL function `payhooks.publish_event` in a transaction, as a payment
 *   core in another language calls it (one statement per event).
 * target 'graphile': the baseline, one graphile-worker job per delivery, added with one
 *   `addJobs` call per event (a team's natural "enqueue a job per endpoint").
 * mode 'burst': as fast as possible, `concurrency` transactions of `batch` events at a time.
 * mode 'rate': one event per transaction on a fixed schedule (`ratePerS`), up to RATE_IN_FLIGHT
 * in flight.
 */
import { sql } from 'drizzle-orm';
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import { openDatabase, type Database } from '../../packages/server/src/db/client.ts';
import { publishEvent } from '../../packages/server/src/events/publish.ts';
import { samplePayment } from './sample-payment.ts';

export interface PublishRequest {
  mode: 'burst' | 'rate';
  target: 'payhooks' | 'payhooks-sql' | 'graphile';
  databaseUrl: string;
  merchantId: string;
  /** graphile only: where each event goes, and the secrets to sign with. */
  endpoints?: Array<{ id: string; url: string; secret: string }>;
  events?: number;
  batch?: number;
  concurrency?: number;
  ratePerS?: number;
  seconds?: number;
}

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let seq = 0;

const object = samplePayment;

type PublishBatch = (n: number) => Promise<string[]>;

async function payhooksPublisher(req: PublishRequest, db: Database): Promise<PublishBatch> {
  return (n) =>
    db.db.transaction(async (tx) => {
      const ids: string[] = [];
      for (let k = 0; k < n; k++) {
        const i = seq++;
        const r = await publishEvent(
          tx,
          { type: 'payment.succeeded', merchantId: req.merchantId, environment: 'sandbox', object: object(i) },
          new Date(),
        );
        ids.push(r.event.id);
      }
      return ids;
    });
}

function sqlFunctionPublisher(req: PublishRequest, db: Database): PublishBatch {
  return (n) =>
    db.db.transaction(async (tx) => {
      const ids: string[] = [];
      for (let k = 0; k < n; k++) {
        const r = (await tx.execute(
          sql`SELECT id FROM payhooks.publish_event('payment.succeeded', ${req.merchantId}, 'sandbox', ${JSON.stringify(object(seq++))}::json)`,
        )) as unknown as { rows: { id: string }[] };
        ids.push(r.rows[0]!.id);
      }
      return ids;
    });
}

function graphilePublisher(req: PublishRequest, utils: WorkerUtils): PublishBatch {
  const endpoints = req.endpoints ?? [];
  return async (n) => {
    const ids: string[] = [];
    const specs = [];
    for (let k = 0; k < n; k++) {
      const i = seq++;
      const id = `evt_gw_${process.pid}_${i}`;
      const body = JSON.stringify({
        id,
        object: 'event',
        type: 'payment.succeeded',
        api_version: '2026-01-01',
        environment: 'sandbox',
        merchant_id: req.merchantId,
        created_at: `${new Date().toISOString().slice(0, 19)}Z`,
        data: { object: object(i) },
      });
      for (const e of endpoints)
        specs.push({ identifier: 'deliver', payload: { event_id: id, endpoint_id: e.id, url: e.url, secret: e.secret, body } });
      ids.push(id);
    }
    await utils.addJobs(specs);
    return ids;
  };
}

/**
 * Publishing transactions in flight at once in 'rate' mode, and so the pool's size. At 64, a
 * baseline that fell behind at half load grew the pool to 65 connections beside its own 52
 * and the harness's, past PostgreSQL's default 100: the baseline worker failed with "too many
 * clients" in two full runs of four. Two cores gain nothing from more concurrent commits.
 */
const RATE_IN_FLIGHT = 24;

/**
 * The connection pool of the scenario's database, kept from one request to the next: a
 * payment service publishes from a warm pool. Opening a fresh pool for every phase made each
 * phase start with a burst of new PostgreSQL backends (fork, catalog caches, the statement
 * prepared again), which stalled the whole machine for up to a second and showed up as the
 * worker's latency. A request for another database closes the old pool first.
 */
let open: { key: string; publish: PublishBatch; close: () => Promise<void> } | null = null;

async function publisherFor(req: PublishRequest, concurrency: number): Promise<PublishBatch> {
  const key = `${req.target} ${req.databaseUrl} ${req.merchantId} ${(req.endpoints ?? []).map((e) => e.id).join(',')}`;
  if (open?.key === key) return open.publish;
  await open?.close().catch(() => {}); // its database may have been dropped meanwhile
  open = null;
  const poolSize = Math.max(concurrency, RATE_IN_FLIGHT) + 1;
  if (req.target === 'graphile') {
    const utils = await makeWorkerUtils({ connectionString: req.databaseUrl, maxPoolSize: poolSize } as never);
    await utils.migrate(); // graphile-worker's schema, before anything is added
    open = { key, publish: graphilePublisher(req, utils), close: async () => utils.release() };
  } else {
    const db = await openDatabase({ databaseUrl: req.databaseUrl, dataDir: undefined, poolSize });
    const publish = req.target === 'payhooks-sql' ? sqlFunctionPublisher(req, db) : await payhooksPublisher(req, db);
    open = { key, publish, close: () => db.close() };
  }
  return open!.publish;
}

async function run(req: PublishRequest): Promise<void> {
  const concurrency = req.concurrency ?? 4;
  const publish = await publisherFor(req, concurrency);
  let pending: [string, number][] = [];
  const flush = () => {
    if (pending.length) process.send!({ type: 'commits', list: pending });
    pending = [];
  };
  const timer = setInterval(flush, 50);
  const record = (ids: string[]) => {
    const t = now();
    for (const id of ids) pending.push([id, t]);
  };
  const t0 = now();
  let published = 0;
  if (req.mode === 'burst') {
    const total = req.events ?? 1000;
    const batch = req.batch ?? 50;
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < total) {
          const n = Math.min(batch, total - next);
          next += n;
          record(await publish(n));
          published += n;
        }
      }),
    );
  } else {
    // Fixed schedule: event k is due at t0 + k / rate, whether or not earlier ones committed.
    const rate = req.ratePerS ?? 100;
    const total = Math.round(rate * (req.seconds ?? 10));
    let inFlight = 0;
    const all: Promise<void>[] = [];
    for (let k = 0; k < total; k++) {
      const due = t0 + (k * 1000) / rate;
      if (due > now()) await sleep(due - now());
      while (inFlight >= RATE_IN_FLIGHT) await sleep(1);
      inFlight++;
      all.push(
        publish(1).then((ids) => {
          record(ids);
          published++;
          inFlight--;
        }),
      );
    }
    await Promise.all(all);
  }
  const ms = now() - t0;
  clearInterval(timer);
  flush();
  process.send!({ type: 'done', published, ms, t0 });
}

process.on('message', (req: PublishRequest) => {
  run(req).catch((err) => process.send!({ type: 'error', message: String(err?.stack ?? err) }));
});
