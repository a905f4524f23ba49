/**
 * A small dependency-free SVG of the run: throughput against the ceiling and the baseline, and
 * latency (p50 / p95 / p99) of payhooks and the baseline at the same offered rates.
 */
export interface Bar {
  label: string;
  value: number;
  kind: 'ceiling' | 'payhooks' | 'baseline';
}

export interface LatencyGroup {
  label: string;
  payhooks: { p50: number; p95: number; p99: number };
  baseline?: { p50: number; p95: number; p99: number } | undefined;
}

const COLORS = { ceiling: '#9aa5b1', payhooks: '#2563eb', baseline: '#f59e0b' } as const;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (n >= 100 ? Math.round(n).toLocaleString('en-US') : String(+n.toFixed(1)));

export function renderChart(title: string, subtitle: string, bars: Bar[], groups: LatencyGroup[]): string {
  const W = 980;
  const out: string[] = [];
  const text = (x: number, y: number, s: string, attrs = '') => out.push(`<text x="${x}" y="${y}" ${attrs}>${esc(s)}</text>`);

  // Left panel: throughput, horizontal bars.
  const left = { x: 20, y: 80, w: 440 };
  const labelW = 190;
  const barH = 22;
  const max = Math.max(...bars.map((b) => b.value), 1);
  text(left.x, 66, 'Throughput, deliveries/s (higher is better)', 'font-weight="bold"');
  bars.forEach((b, i) => {
    const y = left.y + i * (barH + 8);
    const w = ((left.w - labelW - 60) * b.value) / max;
    text(left.x, y + 15, b.label);
    out.push(`<rect x="${left.x + labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[b.kind]}"/>`);
    text(left.x + labelW + w + 4, y + 15, fmt(b.value));
  });
  const leftH = left.y + bars.length * (barH + 8);

  // Right panel: latency, grouped vertical bars (p50, p95, p99) per offered rate and system.
  const right = { x: 500, y: 95, w: 460, h: 240 };
  text(right.x, 66, 'Latency, publish commit -> receiver, ms (lower is better)', 'font-weight="bold"');
  const series: Array<{ label: string; kind: 'payhooks' | 'baseline'; v: { p50: number; p95: number; p99: number } }> = [];
  for (const g of groups) {
    series.push({ label: `${g.label} payhooks`, kind: 'payhooks', v: g.payhooks });
    if (g.baseline) series.push({ label: `${g.label} baseline`, kind: 'baseline', v: g.baseline });
  }
  // Log scale from 1 ms: a few ms at 100/s and seconds at a saturated rate both stay readable.
  const lmax = Math.log10(Math.max(10, ...series.map((s) => s.v.p99)) * 1.2);
  const heightOf = (v: number) => (right.h * Math.log10(Math.max(1, v))) / lmax;
  const colW = right.w / Math.max(1, series.length);
  const base = right.y + right.h;
  out.push(`<line x1="${right.x}" y1="${base}" x2="${right.x + right.w}" y2="${base}" stroke="#333"/>`);
  series.forEach((s, i) => {
    const x0 = right.x + i * colW + 6;
    const bw = (colW - 16) / 3;
    (['p50', 'p95', 'p99'] as const).forEach((k, j) => {
      const h = heightOf(s.v[k]);
      const opacity = [1, 0.7, 0.45][j];
      out.push(
        `<rect x="${(x0 + j * bw).toFixed(1)}" y="${(base - h).toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${h.toFixed(1)}" fill="${COLORS[s.kind]}" fill-opacity="${opacity}"/>`,
      );
      text(x0 + j * bw + bw / 2 - 1, base - h - 4, fmt(s.v[k]), 'font-size="10" text-anchor="middle"');
    });
    s.label
      .split(' ')
      .reduce<string[]>((lines, w) => {
        const last = lines.at(-1);
        if (last !== undefined && `${last} ${w}`.length <= 16) lines[lines.length - 1] = `${last} ${w}`;
        else lines.push(w);
        return lines;
      }, [])
      .forEach((line, k) => {
        text(x0 + (colW - 16) / 2, base + 16 + k * 13, line, 'font-size="11" text-anchor="middle"');
      });
  });
  text(
    right.x,
    base + 60,
    'log scale from 1 ms; bars per system: p50, p95, p99 (lighter = higher percentile)',
    'font-size="11" fill="#555"',
  );

  const H = Math.max(leftH, base + 70) + 20;
  const legend = (['ceiling', 'payhooks', 'baseline'] as const)
    .map(
      (k, i) =>
        `<rect x="${20 + i * 240}" y="${H - 18}" width="12" height="12" fill="${COLORS[k]}"/><text x="${36 + i * 240}" y="${H - 8}">${{ ceiling: 'ceiling: bare undici, no database', payhooks: 'payhooks worker process(es)', baseline: 'graphile-worker, tuned' }[k]}</text>`,
    )
    .join('');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 10}" viewBox="0 0 ${W} ${H + 10}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="20" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`,
    `<text x="20" y="42" font-size="11" fill="#555">${esc(subtitle)}</text>`,
    ...out,
    legend,
    '</svg>',
    '',
  ].join('\n');
}
