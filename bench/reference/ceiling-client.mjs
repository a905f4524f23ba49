// The ceiling of the reference benchmark: a bare undici client POSTing to the same receivers,
// no database, no signing, the same number of requests in flight as the worker. Whatever the
// worker loses against this is the cost of the queue, the signing and the recording.
import { Agent, request } from 'undici';

process.on('message', async ({ urls, total, concurrency, body, warmup }) => {
  const agent = new Agent({ connections: concurrency, keepAliveTimeout: 10_000 });
  const bytes = Buffer.from(body);
  let next = 0;
  let errors = 0;
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
            await res.body.text();
            if (res.statusCode !== 200) errors++;
          } catch {
            errors++;
          }
        }
      }),
    );
  };
  await run(warmup); // connections open and JIT warm, as the worker's are after its first batch
  process.send({ type: 'measuring' }); // the harness reads the receivers' CPU from here
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run(total);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await agent.close();
  process.send({ type: 'done', ms, total, errors, cpu_ms: (cpu.user + cpu.system) / 1000 });
});
