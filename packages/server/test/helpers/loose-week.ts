import type { Database } from '../../src/db/client.ts';

/**
 * A week's four partitions filled as traffic fills them: rows in no order of any index (Platforms,
 * types, endpoints and ids interleaved), so most inserts split a page mid-way and the indexes
 * stay loose. Foreign keys are off for the load (the rows are consistent by construction), as in
 * bench/growth/seed.ts.
 */
export async function fillLooseWeek(database: Database, week: Date, rows = 8000): Promise<void> {
  const at = (i: string) => `'${week.toISOString()}'::timestamptz + (${i}) * interval '1 minute'`;
  await database.script(async (run) => {
    await run('SET LOCAL session_replication_role = replica');
    await run(`
      INSERT INTO events (id, platform_id, environment, merchant_id, type, body, object_id, created_at)
      SELECT 'evt_' || md5(i::text), 'plt_loose' || (i % 7), CASE WHEN i % 5 = 0 THEN 'sandbox' ELSE 'live' END,
             'mch_loose' || (i % 13), (ARRAY['payment.succeeded', 'payment.failed', 'payment.created'])[1 + i % 3], '{}',
             'pay_' || md5((i / 3)::text), ${at('i')}
        FROM generate_series(1, ${rows / 2}) i ORDER BY md5('e' || i)`);
    await run(`
      INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at, week)
      SELECT 'plt_loose' || (i % 7), CASE WHEN i % 5 = 0 THEN 'sandbox' ELSE 'live' END, 'pay_' || md5(i::text) || ':succeeded:1',
             'evt_' || md5(i::text), ${at('i')}, '${week.toISOString()}'
        FROM generate_series(1, ${rows / 2}) i ORDER BY md5('k' || i)`);
    await run(`
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, platform_id, environment, event_type, state, created_at, updated_at)
      SELECT 'wd_' || md5(i::text), 'evt_' || md5((i / 2)::text), 'we_loose' || (i % 11), 'plt_loose' || (i % 7),
             CASE WHEN i % 5 = 0 THEN 'sandbox' ELSE 'live' END, (ARRAY['payment.succeeded', 'payment.failed', 'payment.created'])[1 + i % 3],
             CASE WHEN i % 9 = 0 THEN 'exhausted' ELSE 'delivered' END, ${at('i / 2')}, ${at('i / 2')}
        FROM generate_series(1, ${rows}) i ORDER BY md5('d' || i)`);
    await run(`
      INSERT INTO delivery_attempts (id, delivery_id, attempt_number, trigger, succeeded, started_at, duration_ms, delivery_created_at)
      SELECT 'att_' || md5(i::text), 'wd_' || md5(i::text), 1, 'automatic', true, ${at('i / 2')}, 5, ${at('i / 2')}
        FROM generate_series(1, ${rows}) i ORDER BY md5('a' || i)`);
  });
}

/** Each index of `partition` and its size in bytes. */
export async function indexSizes(database: Database, partition: string): Promise<Map<string, number>> {
  const rows = await database.script((run) =>
    run(
      `SELECT c.relname, pg_relation_size(c.oid) AS bytes FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = '${partition}'::regclass ORDER BY 1`,
    ),
  );
  return new Map(rows.map((r) => [String(r.relname), Number(r.bytes)]));
}

/**
 * What every index of `partition` answers: each one read whole, in its own order (sequential and
 * bitmap scans off, and the plan checked to be a scan of that index), as one digest per index.
 */
export async function indexAnswers(database: Database, partition: string): Promise<Record<string, string>> {
  return database.script(async (run) => {
    await run('SET LOCAL enable_seqscan = off');
    await run('SET LOCAL enable_bitmapscan = off');
    await run('SET LOCAL enable_sort = off');
    await run('SET LOCAL enable_incremental_sort = off');
    const out: Record<string, string> = {};
    for (const r of await run(
      `SELECT c.relname, pg_get_indexdef(c.oid) AS def FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = '${partition}'::regclass ORDER BY 1`,
    )) {
      const def = String(r.def);
      const m = /USING btree \((.*?)\)(?: WHERE (.*))?$/.exec(def);
      if (!m) throw new Error(`unexpected index: ${def}`);
      const order = m[1]!;
      const columns = order.replace(/ DESC/g, '');
      const where = m[2] ? `WHERE ${m[2]}` : '';
      const query = `SELECT ${columns} FROM ${partition} ${where} ORDER BY ${order}`;
      const plan = (await run(`EXPLAIN ${query}`)).map((p) => String(Object.values(p)[0])).join('\n');
      if (!plan.includes(String(r.relname))) throw new Error(`${r.relname} is not what answers ${query}:\n${plan}`);
      const [digest] = await run(`SELECT count(*) AS n, md5(string_agg(t::text, '|')) AS h FROM (${query}) t`);
      out[String(r.relname)] = `${digest!.n}:${digest!.h}`;
    }
    return out;
  });
}
