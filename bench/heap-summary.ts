/**
 * What a worker allocates, from a sampling heap profile written by bench/heap-sample.cjs: bytes
 * by allocating function and its callers (DEPTH, 2), largest first (TOP, 30), and per delivery
 * when the number of deliveries is given.
 *
 *   npx tsx bench/heap-summary.ts /tmp/payhooks-heap-<pid>.json 20000
 */
import { readFileSync } from 'node:fs';

interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: HeapNode[];
}

const [file, deliveriesArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx bench/heap-summary.ts <profile.json> [deliveries]');
  process.exit(2);
}
const head = (JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }).head;
const per = Number(deliveriesArg ?? 1);
const depth = Number(process.env.DEPTH ?? 2);
const bytes = new Map<string, number>();
let total = 0;

function walk(node: HeapNode, callers: string[]): void {
  const f = node.callFrame;
  const name = `${f.functionName || '(anonymous)'}@${f.url.split('/').slice(-2).join('/')}:${f.lineNumber}`;
  if (node.selfSize) {
    const key = [name, ...callers].slice(0, depth).join(' <- ');
    bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
    total += node.selfSize;
  }
  for (const child of node.children ?? []) walk(child, [name, ...callers]);
}
walk(head, []);

console.log(`${total} bytes sampled${per > 1 ? `, ${Math.round(total / per)} per delivery` : ''}`);
for (const [key, b] of [...bytes].sort((x, y) => y[1] - x[1]).slice(0, Number(process.env.TOP ?? 30)))
  console.log(`${String(Math.round(b / per)).padStart(8)}  ${key}`);
