// The ceiling of the reference benchmark: a bare undici client POSTing to the same receivers,
// no database, no signing, the same number of requests in flight as the worker. Whatever the
// worker loses against this is the cost of the queue, the signing and the recording.
//
// With `databaseUrl`, the recording ceiling: the same client also records each request's outcome
// in PostgreSQL, 100 rows per INSERT (the least a delivery system must write): what payhooks
// loses against that is the cost of its queue and its log beyond one row per delivery.
import { Agent, request } from 'undici';

const BATCH = 100;

process.on('message', async ({ urls, total, concurrency, body, warmup, databaseUrl }) => {
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 10_000 });
  const bytes = Buffer.from(body);
  let next = 0;
  let errors = 0;
  const recorder = databaseUrl ? await openRecorder(databaseUrl) : null;
  const run = async (count) => {
    next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const i = next++;
          try {
            const res = await request(urls[i % urls.length], {
              method: 'POST',
              dispatcher: agent,
              headers: { 'content-type': 'application/json', 'x-ceiling-request': String(i) },
              body: bytes,
            });
            const answer = await res.body.text();
            if (res.statusCode !== 200) errors++;
            recorder?.add(i, res.statusCode, answer);
          } catch {
            errors++;
          }
        }
      }),
    );
  };
  await run(warmup); // connections open and JIT warm, as the worker's are after its first batch
  await recorder?.flush();
  process.send({ type: 'measuring' }); // the harness reads the receivers' CPU from here
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(total);
  await recorder?.flush();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await agent.close();
  await recorder?.close();
  process.send({ type: 'done', ms, total, errors, cpu_ms: (cpu.user + cpu.system) / 1000 });
});

/** Rows buffered and written 100 per INSERT, on a few connections; `flush` waits for all of them. */
async function openRecorder(databaseUrl) {
  const { default: pg } = await import('pg');
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4, application_name: 'bench-recorder' });
  const pending = new Set();
  let rows = [];
  const write = (batch) => {
    const p = pool
      .query(
        'INSERT INTO recorded (request, status, response, recorded_at) SELECT * FROM unnest($1::int[], $2::int[], $3::text[], $4::timestamptz[])',
        [batch.map((r) => r[0]), batch.map((r) => r[1]), batch.map((r) => r[2]), batch.map(() => new Date())],
      )
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  return {
    add(request, status, response) {
      rows.push([request, status, response]);
      if (rows.length >= BATCH) {
        write(rows);
        rows = [];
      }
    },
    async flush() {
      if (rows.length) write(rows);
      rows = [];
      await Promise.all([...pending]);
    },
    close: () => pool.end(),
  };
}
