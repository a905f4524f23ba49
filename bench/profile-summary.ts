/**
 * Where a worker's CPU goes, from a `--cpu-prof` profile of a bench run:
 *
 *   BENCH_WORKER_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npm run -s bench -- --only backlog100 --json
 *   npx tsx bench/profile-summary.ts /tmp/prof/<file>.cpuprofile 20000
 *
 * Self time (the function running, not its callees) grouped by what the code is: our modules by
 * file, libraries by package, Node's internals by area. With the number of deliveries the
 * profile covered, each group is also given in microseconds per delivery.
 */
import { readFileSync } from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string };
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const [file, deliveriesArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx bench/profile-summary.ts <profile.cpuprofile> [deliveries]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const deliveries = Number(deliveriesArg ?? 0);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));

function group(n: Node): string {
  const { url, functionName } = n.callFrame;
  if (!url) {
    if (functionName === '(idle)') return '(idle)';
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(program)') return 'native (program: syscalls, V8 runtime)';
    return `native ${functionName || '(anonymous)'}`;
  }
  const ours = /packages\/(server|contract)\/(src|dist)\/(.+?)\.(ts|js)$/.exec(url);
  if (ours) return `payhooks ${ours[3]}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return pkg[1]!;
  const internal = /^node:internal\/(.+?)(\/|$)/.exec(url) ?? /^node:(.+)$/.exec(url);
  if (internal) return `node ${internal[1]}`;
  return url;
}

const self = new Map<string, number>();
let busy = 0;
let total = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  const g = group(byId.get(id)!);
  total += dt;
  if (g === '(idle)') return;
  busy += dt;
  self.set(g, (self.get(g) ?? 0) + dt);
});

const rows = [...self.entries()].sort((a, b) => b[1] - a[1]);
console.log(
  `profile ${file}: ${(total / 1e6).toFixed(2)} s, busy ${(busy / 1e6).toFixed(2)} s${deliveries ? `, ${deliveries} deliveries` : ''}`,
);
console.log(`| group | share of busy | µs per delivery |`);
console.log('|---|---|---|');
for (const [g, us] of rows.slice(0, Number(process.env.TOP ?? 30))) {
  const share = ((100 * us) / busy).toFixed(1);
  console.log(`| ${g} | ${share} % | ${deliveries ? (us / deliveries).toFixed(1) : ''} |`);
}
