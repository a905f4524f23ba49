/**
 * One-event publishing on a stored history against an empty database, same code, same
 * Platforms and endpoints, phases alternating (ABBA) so a shared machine weighs on both.
 *
 *   npx tsx bench/growth/seed.ts postgres://postgres@127.0.0.1:5432/history 1000000   # once
 *   HISTORY_URL=postgres://postgres@127.0.0.1:5432/history npx tsx --conditions=@payhooks/source bench/history-publish.ts
 *   # ROUNDS=6 PHASE=1000 WARM=1500 SCENARIOS=single,single-key
 *
 * The empty side is a fresh database seeded by the same seed with one delivery (the same 20
 * Platforms, merchants, endpoints and subscriptions). Each phase publishes PHASE events of
 * `plt_growth01`'s first merchant (live: fanned out to its live endpoints subscribed to
 * payment.succeeded), one `publishEvent` per transaction from 8 publishers, without (`single`) and with
 * (`single-key`) an idempotency key. Prints events/s and the CPU per event of that side's own
 * PostgreSQL backends (by application_name), and the history/empty ratio of the rounds' medians.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { cpuMsOf } from './reference/machine.ts';
import { samplePayment } from './reference/sample-payment.ts';
import { openDatabase, type Database } from '../packages/server/src/db/client.ts';
import { migrate } from '../packages/server/src/db/migrate.ts';
import { publishEvent } from '../packages/server/src/events/publish.ts';
import { seedHistory } from './growth/seed.ts';

const HISTORY_URL = process.env.HISTORY_URL;
if (!HISTORY_URL) throw new Error('HISTORY_URL: a database seeded by bench/growth/seed.ts');
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const PHASE = Number(process.env.PHASE ?? 1000);
const WARM = Number(process.env.WARM ?? 1500);
const SCENARIOS = (process.env.SCENARIOS ?? 'single,single-key').split(',');
const ADMIN_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
const emptyName = `history_publish_${randomBytes(4).toString('hex')}`;
await admin.query(`CREATE DATABASE ${emptyName}`);
const emptyUrl = new URL(ADMIN_URL);
emptyUrl.pathname = `/${emptyName}`;

interface Side {
  name: string;
  database: Database;
}
const open = async (name: string, url: string): Promise<Side> => {
  const u = new URL(url);
  u.searchParams.set('application_name', `history-publish-${name}`);
  return { name, database: await openDatabase({ databaseUrl: u.toString(), poolSize: 9 }) };
};

try {
  const setup = await openDatabase({ databaseUrl: emptyUrl.toString(), poolSize: 1 });
  await migrate(setup);
  await setup.close();
  await seedHistory(emptyUrl.toString(), { deliveries: 1 });
  const sides = [await open('history', HISTORY_URL), await open('empty', emptyUrl.toString())];
  let seq = 0;
  const run0 = randomBytes(3).toString('hex');
  const publish = (s: Side, key: boolean) => {
    const i = seq++;
    return s.database.db.transaction((tx) =>
      publishEvent(
        tx,
        {
          type: 'payment.succeeded',
          merchantId: 'mch_growth011',
          environment: 'live',
          object: samplePayment(i),
          ...(key ? { idempotencyKey: `history-publish-${run0}-${i}` } : {}),
        },
        new Date(),
      ),
    );
  };
  const backendCpu = async (s: Side) => {
    const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
      `history-publish-${s.name}`,
    ]);
    return new Map(rows.map((r) => [r.pid, cpuMsOf(r.pid) ?? 0]));
  };
  const run = async (s: Side, events: number, key: boolean) => {
    let left = events;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (left-- > 0) await publish(s, key);
      }),
    );
  };
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const scenario of SCENARIOS) {
    const key = scenario === 'single-key';
    for (const s of sides) await run(s, WARM, key);
    const rounds = new Map<string, { perS: number[]; pgUs: number[] }>(sides.map((s) => [s.name, { perS: [], pgUs: [] }]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const s of r % 2 ? [...sides].reverse() : sides) {
        const g0 = await backendCpu(s);
        const t0 = performance.now();
        await run(s, PHASE, key);
        const ms = performance.now() - t0;
        const g1 = await backendCpu(s);
        let pgMs = 0;
        for (const [pid, now] of g1) pgMs += now - (g0.get(pid) ?? 0);
        rounds.get(s.name)!.perS.push(Math.round((PHASE / ms) * 1000));
        rounds.get(s.name)!.pgUs.push(Math.round((pgMs * 1000) / PHASE));
      }
    }
    const h = rounds.get('history')!;
    const e = rounds.get('empty')!;
    console.log(
      JSON.stringify({
        scenario,
        history: { per_s: median(h.perS), postgres_us: median(h.pgUs), rounds_per_s: h.perS, rounds_postgres_us: h.pgUs },
        empty: { per_s: median(e.perS), postgres_us: median(e.pgUs), rounds_per_s: e.perS, rounds_postgres_us: e.pgUs },
        'history / empty, median of the rounds': {
          per_s: Number(median(h.perS.map((x, i) => x / e.perS[i]!)).toFixed(3)),
          postgres_us: Number(median(h.pgUs.map((x, i) => x / e.pgUs[i]!)).toFixed(3)),
        },
      }),
    );
  }
  for (const s of sides) await s.database.close();
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${emptyName} WITH (FORCE)`);
  await admin.end();
}
