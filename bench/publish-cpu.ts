/**
 * Where a one-event publish transaction's CPU goes: the publishing process against PostgreSQL
 * (every `postgres` process of the machine, from /proc, so run it on a quiet machine).
 *
 *   npx tsx --conditions=@payhooks/source bench/publish-cpu.ts   # N=4000 events, WARM=500, PGPORT_PROBE=5432
 *
 * 8 publishers, each `publishEvent` in its own `db.transaction` (BEGIN, the statement, COMMIT,
 * then the after-commit wake-up), one endpoint, after WARM events of warm-up (fewer than about
 * 2,000 leave V8 still optimising the publisher while it is measured). Prints events/s and
 * CPU microseconds per event of the publisher and of PostgreSQL (bench/investigations/cpu-per-delivery.md).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../packages/server/src/db/client.ts';
import { migrate } from '../packages/server/src/db/migrate.ts';
import { publishEvent } from '../packages/server/src/events/publish.ts';
import { createPlatform } from '../packages/server/src/tenancy/platforms.ts';
import { cpuMsOfAll } from './reference/machine.ts';
import { samplePayment } from './reference/sample-payment.ts';
import { webhookEndpoints } from '../packages/server/src/db/schema.ts';

const PORT = Number(process.env.PGPORT_PROBE ?? 5432);
/** CPU ms of every `postgres` process now running (the backends come and go with the pool). */
const pgCpu = () => {
  const pids = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        return readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'postgres';
      } catch {
        return false;
      }
    })
    .map(Number);
  return cpuMsOfAll(pids);
};
const admin = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${PORT}/postgres` });
await admin.connect();
const name = `probe_${randomBytes(4).toString('hex')}`;
await admin.query(`CREATE DATABASE ${name}`);
const db = await openDatabase({ databaseUrl: `postgres://postgres@127.0.0.1:${PORT}/${name}`, poolSize: 9 });
await migrate(db);
const p = await createPlatform(db.db, 'probe', { passwordCost: { N: 1024, r: 8, p: 1 } });
await db.db.insert(webhookEndpoints).values({
  id: 'we_probe',
  platformId: p.platform_id,
  environment: 'sandbox',
  url: 'http://127.0.0.1:9/x',
  enabledEvents: ['*'],
  secretCiphertext: 'x',
  status: 'enabled',
} as never);
let seq = 0;
const one = () =>
  db.db.transaction((tx) =>
    publishEvent(
      tx,
      { type: 'payment.succeeded', merchantId: p.merchant_id, environment: 'sandbox', object: samplePayment(seq++) },
      new Date(),
    ),
  );
const run = async (n: number) => {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next++ < n) await one();
    }),
  );
};
await run(Number(process.env.WARM ?? 500));
const c0 = process.cpuUsage();
const g0 = pgCpu();
const t0 = performance.now();
const N = Number(process.env.N ?? 4000);
await run(N);
const ms = performance.now() - t0;
const c = process.cpuUsage(c0);
const g = pgCpu() - g0;
console.log(
  JSON.stringify({
    per_s: Math.round((N / ms) * 1000),
    publisher_us: Math.round((c.user + c.system) / N),
    postgres_us: Math.round((g * 1000) / N),
  }),
);
await db.close();
await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
await admin.end();
