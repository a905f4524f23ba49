// A preload for a worker under the bench: V8's sampling heap profiler, counting every allocation
// (objects a scavenge or a mark-compact already collected included, unlike `--heap-prof`, which
// keeps only what is still alive), from HEAP_SAMPLE_AFTER_MS (1,500) after start until the bench
// stops the worker; the profile goes to /tmp/payhooks-heap-<pid>.json.
//
//   BENCH_WORKER_NODE_ARGS="--require $PWD/bench/heap-sample.cjs" npm run -s bench -- --only backlog100 --json
//   npx tsx bench/heap-summary.ts /tmp/payhooks-heap-<pid>.json 20000
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');

const session = new Session();
session.connect();
session.post('HeapProfiler.enable');
setTimeout(
  () =>
    session.post('HeapProfiler.startSampling', {
      samplingInterval: 512,
      includeObjectsCollectedByMinorGC: true,
      includeObjectsCollectedByMajorGC: true,
    }),
  Number(process.env.HEAP_SAMPLE_AFTER_MS ?? 1500),
).unref();

process.on('SIGTERM', () => {
  session.post('HeapProfiler.stopSampling', (err, result) => {
    writeFileSync(`/tmp/payhooks-heap-${process.pid}.json`, JSON.stringify(err ? { error: String(err) } : result.profile));
    process.exit(0);
  });
});
