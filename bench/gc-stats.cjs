// A preload for a worker under the bench: counts its garbage collections by kind and their time,
// and writes them to /tmp/payhooks-gc-<pid>.json when the bench stops it (SIGTERM, which it sends
// whenever BENCH_WORKER_NODE_ARGS is set):
//
//   BENCH_WORKER_NODE_ARGS="--require $PWD/bench/gc-stats.cjs" npm run -s bench -- --only backlog100 --json
//
// Kinds are node's perf_hooks constants: 1 minor (scavenge), 4 major, 8 incremental, 16 weak callbacks.
const { PerformanceObserver } = require('node:perf_hooks');
const { writeFileSync } = require('node:fs');

const byKind = {};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = e.detail?.kind ?? 0;
    byKind[kind] ??= { count: 0, ms: 0 };
    byKind[kind].count++;
    byKind[kind].ms += e.duration;
  }
}).observe({ entryTypes: ['gc'] });

process.on('SIGTERM', () => {
  writeFileSync(`/tmp/payhooks-gc-${process.pid}.json`, `${JSON.stringify(byKind)}\n`);
  process.exit(0);
});
