/**
 * Publishing, this checkout against another one, interleaved in one process so a shared or
 * drifting machine weighs on both alike:
 *
 *   git worktree add /tmp/before <commit> && ln -s "$PWD/node_modules" /tmp/before/node_modules
 *   OTHER=/tmp/before npx tsx --conditions=@payhooks/source bench/publish-ab.ts
 *
 * One scratch database; each side opens its own pool on it (its own `db/client.ts`, so its own
 * wake-up after commit) and publishes with its own `events/` code. Every scenario runs ROUNDS
 * rounds (default 6) of PHASE events (default 1,000) per side, in mirrored order (A B, B A, ...),
 * after WARM events (default 2,000) of warm-up per side and scenario. For each side: events/s,
 * the process's CPU per event (one side runs at a time) and PostgreSQL's, the CPU of that side's
 * own backends (by `application_name`), so other databases' work on the machine is not counted.
 *
 *   single      `publishEvent`, one event per transaction, 8 at a time (the payment flows)
 *   single-key  the same with an idempotency key per event
 *   batch       `publishEvents`, 50 events per transaction, 4 at a time
 *   alone       `publishEventsAlone`, 8 events per statement with keys, 4 at a time (the internal API)
 *
 * SCENARIOS=single,batch picks some; ENDPOINTS (default 1) endpoints per event. OWN_SCHEMA=1
 * gives the other side a database of its own, migrated by its own checkout (for a change of
 * schema: each side on the tables it was written for; then PostgreSQL's CPU is still each
 * side's own backends). SEED=<deliveries> first gives each database that much history
 * (growth/seed.ts: four weekly partitions of events, deliveries, attempts and keys).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import { cpuMsOf } from './reference/machine.ts';
import { samplePayment } from './reference/sample-payment.ts';
import { seedHistory } from './growth/seed.ts';

const OTHER = process.env.OTHER;
if (!OTHER) throw new Error('OTHER=<path to another checkout> is required (see the comment at the top)');
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const PHASE = Number(process.env.PHASE ?? 1000);
const WARM = Number(process.env.WARM ?? 2000);
const ENDPOINTS = Number(process.env.ENDPOINTS ?? 1);
const SCENARIOS = (process.env.SCENARIOS ?? 'single,single-key,batch,alone').split(',');
const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const OWN_SCHEMA = process.env.OWN_SCHEMA === '1';
const SEED = Number(process.env.SEED ?? 0);

interface Input {
  type: string;
  merchantId: string;
  environment: 'sandbox';
  object: Record<string, unknown>;
  idempotencyKey?: string;
}
interface Side {
  name: string;
  database: {
    db: { transaction<T>(fn: (tx: never) => Promise<T>): Promise<T> };
    close(): Promise<void>;
  };
  publishEvent(tx: never, input: Input, now: Date): Promise<unknown>;
  publishEvents(tx: never, inputs: Input[], now: Date): Promise<unknown>;
  publishEventsAlone(database: never, inputs: Input[], now: Date): Promise<unknown>;
}

/** A checkout's own client and publishing code (`events/publish-batch.ts` where it still exists). */
async function load(name: string, root: string, url: string): Promise<Side> {
  const src = resolve(root, 'packages/server/src');
  const client = await import(resolve(src, 'db/client.ts'));
  const one = await import(resolve(src, 'events/publish.ts'));
  const batchFile = resolve(src, 'events/publish-batch.ts');
  const many = existsSync(batchFile) ? await import(batchFile) : one;
  const u = new URL(url);
  u.searchParams.set('application_name', `publish-ab-${name}`);
  const database = await client.openDatabase({ databaseUrl: u.toString(), poolSize: 9 });
  return { name, database, publishEvent: one.publishEvent, publishEvents: many.publishEvents, publishEventsAlone: many.publishEventsAlone };
}

const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
const dbNames = [`publish_ab_${randomBytes(4).toString('hex')}`];
if (OWN_SCHEMA) dbNames.push(`${dbNames[0]}_other`);
const urls = dbNames.map((name) => {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
});
for (const name of dbNames) await admin.query(`CREATE DATABASE ${name}`);
try {
  const here = await load('this', resolve(import.meta.dirname, '..'), urls[0]!);
  const other = await load('other', OTHER, urls[OWN_SCHEMA ? 1 : 0]!);
  /** A side's merchant: one Platform per database, made by the checkout that migrated it. */
  const merchants = new Map<string, string>();
  for (const [i, root] of (OWN_SCHEMA ? [resolve(import.meta.dirname, '..'), OTHER] : [resolve(import.meta.dirname, '..')]).entries()) {
    const src = resolve(root, 'packages/server/src');
    const { migrate } = await import(resolve(src, 'db/migrate.ts'));
    const { createPlatform } = await import(resolve(src, 'tenancy/platforms.ts'));
    const { webhookEndpoints } = await import(resolve(src, 'db/schema.ts'));
    const { openDatabase } = await import(resolve(src, 'db/client.ts'));
    const setup = await openDatabase({ databaseUrl: urls[i]!, poolSize: 1 });
    await migrate(setup);
    const p = await createPlatform(setup.db, 'publish-ab', { passwordCost: { N: 1024, r: 8, p: 1 } });
    for (let e = 0; e < ENDPOINTS; e++)
      await setup.db.insert(webhookEndpoints).values({
        id: `we_ab${e}`,
        platformId: p.platform_id,
        environment: 'sandbox',
        url: `http://127.0.0.1:9/ab${e}`,
        enabledEvents: ['*'],
        secretCiphertext: 'x',
        status: 'enabled',
      } as never);
    await setup.close();
    if (SEED > 0) await seedHistory(urls[i]!, { deliveries: SEED, log: (l) => process.stderr.write(`${l}\n`) });
    if (i === 0) merchants.set('this', p.merchant_id);
    merchants.set('other', p.merchant_id);
  }

  let seq = 0;
  let side = 'this';
  const event = (key: boolean): Input => {
    const i = seq++;
    return {
      type: 'payment.succeeded',
      merchantId: merchants.get(side)!,
      environment: 'sandbox',
      object: samplePayment(i),
      ...(key ? { idempotencyKey: `ab-${i}` } : {}),
    };
  };
  const scenarios: Record<string, { perCall: number; concurrency: number; call(s: Side): Promise<unknown> }> = {
    single: {
      perCall: 1,
      concurrency: 8,
      call: (s) => s.database.db.transaction((tx) => s.publishEvent(tx, event(false), new Date())),
    },
    'single-key': {
      perCall: 1,
      concurrency: 8,
      call: (s) => s.database.db.transaction((tx) => s.publishEvent(tx, event(true), new Date())),
    },
    batch: {
      perCall: 50,
      concurrency: 4,
      call: (s) =>
        s.database.db.transaction((tx) =>
          s.publishEvents(
            tx,
            Array.from({ length: 50 }, () => event(false)),
            new Date(),
          ),
        ),
    },
    alone: {
      perCall: 8,
      concurrency: 4,
      call: (s) =>
        s.publishEventsAlone(
          s.database as never,
          Array.from({ length: 8 }, () => event(true)),
          new Date(),
        ),
    },
  };
  /** CPU ms of each of a side's backends now (a backend that ends during a phase is not counted). */
  const backendCpu = async (s: Side) => {
    const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
      `publish-ab-${s.name}`,
    ]);
    return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid) ?? 0]));
  };
  const cpuSince = (before: Map<number, number>, after: Map<number, number>) => {
    let ms = 0;
    for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
    return ms;
  };
  const results: Record<string, unknown>[] = [];
  for (const name of SCENARIOS) {
    const sc = scenarios[name];
    if (!sc) throw new Error(`no scenario '${name}'`);
    const run = async (s: Side, events: number) => {
      side = s.name;
      let left = Math.ceil(events / sc.perCall);
      await Promise.all(
        Array.from({ length: sc.concurrency }, async () => {
          while (left-- > 0) await sc.call(s);
        }),
      );
    };
    for (const s of [here, other]) await run(s, WARM);
    const totals = new Map<string, { events: number; ms: number; cpuUs: number; pgMs: number; perS: number[]; pgUs: number[] }>();
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of r % 2 ? [other, here] : [here, other]) {
        const g0 = await backendCpu(s);
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await run(s, PHASE);
        const ms = performance.now() - t0;
        const c = process.cpuUsage(c0);
        const pgMs = cpuSince(g0, await backendCpu(s));
        const t = totals.get(s.name) ?? { events: 0, ms: 0, cpuUs: 0, pgMs: 0, perS: [], pgUs: [] };
        const events = Math.ceil(PHASE / sc.perCall) * sc.perCall;
        t.events += events;
        t.ms += ms;
        t.cpuUs += c.user + c.system;
        t.pgMs += pgMs;
        t.perS.push(Math.round((events / ms) * 1000));
        t.pgUs.push(Math.round((pgMs * 1000) / events));
        totals.set(s.name, t);
      }
    }
    for (const [side, t] of totals) {
      results.push({
        scenario: name,
        side,
        per_s: Math.round((t.events / t.ms) * 1000),
        publisher_us: Math.round(t.cpuUs / t.events),
        postgres_us: Math.round((t.pgMs * 1000) / t.events),
        rounds_per_s: t.perS,
        rounds_postgres_us: t.pgUs,
      });
    }
    // Round by round, this side against the other side's phase next to it.
    const a = totals.get('this')!;
    const b = totals.get('other')!;
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    results.push({
      scenario: name,
      side: 'this / other, median of the rounds',
      per_s: Number(median(a.perS.map((x, i) => x / b.perS[i]!)).toFixed(3)),
      postgres_us: Number(median(a.pgUs.map((x, i) => x / b.pgUs[i]!)).toFixed(3)),
    });
  }
  for (const r of results) console.log(JSON.stringify(r));
  await here.database.close();
  await other.database.close();
} finally {
  for (const name of dbNames) await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
  await admin.end();
}
