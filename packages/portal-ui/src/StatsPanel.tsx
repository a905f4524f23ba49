import { useEffect, useState } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, type Endpoint, type StatsQuery, type WebhookStats } from './api.ts';
import { latestOnly } from './latest.ts';
import { Link } from './router.tsx';
import { ErrorBox, Loading, ScrollTable } from './ui.tsx';

type Failures = WebhookStats['totals']['failures'];
type FailureKind = keyof Failures;

/** The failure kinds in the order the charts stack them, with their labels and colours. */
const KINDS: Array<{ key: FailureKind; label: string; color: string }> = [
  { key: 'http_5xx', label: '5xx', color: '#b3261e' },
  { key: 'http_4xx', label: '4xx', color: '#e8710a' },
  { key: 'http_429', label: '429', color: '#f2b600' },
  { key: 'timeout', label: 'Timeout', color: '#7b1fa2' },
  { key: 'connection', label: 'Connection or DNS', color: '#5f6b7a' },
  { key: 'tls', label: 'TLS', color: '#1a73e8' },
  { key: 'endpoint_disabled', label: 'Endpoint disabled', color: '#9aa5b4' },
  { key: 'other', label: 'Other', color: '#3c4656' },
];
const OK_COLOR = '#137333';
/** The attempts chart's legend in the stacking order: Succeeded, then the kinds as listed. */
const legendOrder = (item: { dataKey?: unknown }) => (item.dataKey === 'successes' ? -1 : KINDS.findIndex((k) => k.key === item.dataKey));

export type Period = '24h' | '7d' | '30d';
const PERIODS: Array<{ value: Period; label: string }> = [
  { value: '24h', label: 'Last 24 hours, by hour' },
  { value: '7d', label: 'Last 7 days, by hour' },
  { value: '30d', label: 'Last 30 days, by day' },
];

const HOUR = 3_600_000;

/** The query of a period: hourly ranges end with the current hour, so 7 days is exactly 168 of them. */
export function periodQuery(period: Period, now = Date.now()): StatsQuery {
  if (period === '24h') return { granularity: 'hour' };
  if (period === '30d') return { granularity: 'day' };
  const until = Math.floor(now / HOUR) * HOUR + HOUR;
  const iso = (t: number) => new Date(t).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { granularity: 'hour', from: iso(until - 7 * 24 * HOUR), until: iso(until) };
}

/** A bucket's label in the reader's time zone: its hour, or its day. */
function bucketLabel(start: string, granularity: WebhookStats['granularity']): string {
  const d = new Date(start);
  return granularity === 'hour'
    ? d.toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
    : d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' });
}

const ms = (v: number | null) => (v === null ? '—' : `${v} ms`);
const rate = (t: { attempts: number; successes: number }) =>
  t.attempts === 0 ? '—' : `${((t.successes / t.attempts) * 100).toFixed(t.successes === t.attempts || t.successes === 0 ? 0 : 1)}%`;

/**
 * Delivery health over time, for one endpoint or for all of them: attempts stacked by outcome
 * (successes and each kind of failure) and answer times (p50, p95, p99), drawn with Recharts,
 * each chart with a table of the same numbers (for screen readers and for copying).
 */
export function StatsPanel({ endpointId, onStats }: { endpointId?: string; onStats?: (s: WebhookStats) => void }) {
  const [period, setPeriod] = useState<Period>('24h');
  const [stats, setStats] = useState<WebhookStats | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [latest] = useState(latestOnly);
  // biome-ignore lint/correctness/useExhaustiveDependencies: read again when the endpoint or the period changes; latest and onStats are stable enough
  useEffect(() => {
    const query = periodQuery(period);
    void latest(
      endpointId ? api.endpointStats(endpointId, query) : api.stats(query),
      (s: WebhookStats) => {
        setStats(s);
        onStats?.(s);
      },
      setError,
    );
  }, [endpointId, period]);

  const rows: Row[] =
    stats?.data.map((b) => ({
      label: bucketLabel(b.start, stats.granularity),
      start: b.start,
      attempts: b.attempts,
      successes: b.successes,
      ...b.failures,
      p50: b.latency_ms.p50,
      p95: b.latency_ms.p95,
      p99: b.latency_ms.p99,
    })) ?? [];
  const shown = KINDS.filter((k) => (stats?.totals.failures[k.key] ?? 0) > 0);

  return (
    <section className="card stats-panel" aria-labelledby="stats-title" data-testid="stats-panel">
      <div className="stats-head">
        <h2 id="stats-title">Delivery health</h2>
        <select aria-label="Period" value={period} onChange={(e) => setPeriod(e.target.value as Period)}>
          {PERIODS.map((p) => (
            <option key={p.value} value={p.value}>
              {p.label}
            </option>
          ))}
        </select>
      </div>
      <ErrorBox error={error} />
      {!stats && !error && <Loading />}
      {stats && (
        <>
          <p className="stats-summary" data-testid="stats-summary">
            <strong>{stats.totals.attempts}</strong> {stats.totals.attempts === 1 ? 'attempt' : 'attempts'},{' '}
            <strong>{rate(stats.totals)}</strong> succeeded
            {stats.totals.latency_ms.p50 !== null && (
              <>
                ; answer time p50 <strong>{ms(stats.totals.latency_ms.p50)}</strong>, p95 <strong>{ms(stats.totals.latency_ms.p95)}</strong>
                , p99 <strong>{ms(stats.totals.latency_ms.p99)}</strong>
              </>
            )}
            .
          </p>
          <figure className="stats-figure" data-testid="attempts-chart">
            <figcaption>Attempts by outcome</figcaption>
            <div className="stats-chart" aria-hidden="true">
              <ResponsiveContainer width="100%" height={220}>
                <BarChart data={rows} margin={{ top: 8, right: 8, bottom: 0, left: 0 }}>
                  <CartesianGrid strokeDasharray="3 3" vertical={false} />
                  <XAxis dataKey="label" tick={{ fontSize: 11 }} minTickGap={24} />
                  <YAxis allowDecimals={false} tick={{ fontSize: 11 }} width={40} />
                  <Tooltip />
                  <Legend itemSorter={legendOrder} />
                  <Bar dataKey="successes" name="Succeeded" stackId="a" fill={OK_COLOR} isAnimationActive={false} />
                  {shown.map((k) => (
                    <Bar key={k.key} dataKey={k.key} name={k.label} stackId="a" fill={k.color} isAnimationActive={false} />
                  ))}
                </BarChart>
              </ResponsiveContainer>
            </div>
            <BucketTable
              title="Table of attempts"
              testId="attempts-table"
              granularity={stats.granularity}
              rows={rows}
              columns={[
                { label: 'Attempts', cell: (r) => r.attempts },
                { label: 'Succeeded', cell: (r) => r.successes },
                ...KINDS.map((k) => ({ label: k.label, cell: (r: Row) => r[k.key] })),
              ]}
            />
          </figure>
          <figure className="stats-figure" data-testid="latency-chart">
            <figcaption>Answer time (ms)</figcaption>
            <div className="stats-chart" aria-hidden="true">
              <ResponsiveContainer width="100%" height={200}>
                <LineChart data={rows} margin={{ top: 8, right: 8, bottom: 0, left: 0 }}>
                  <CartesianGrid strokeDasharray="3 3" vertical={false} />
                  <XAxis dataKey="label" tick={{ fontSize: 11 }} minTickGap={24} />
                  <YAxis tick={{ fontSize: 11 }} width={48} />
                  <Tooltip />
                  <Legend />
                  <Line dataKey="p50" name="p50" stroke="#1a73e8" dot={false} isAnimationActive={false} />
                  <Line dataKey="p95" name="p95" stroke="#e8710a" dot={false} isAnimationActive={false} />
                  <Line dataKey="p99" name="p99" stroke="#b3261e" dot={false} isAnimationActive={false} />
                </LineChart>
              </ResponsiveContainer>
            </div>
            <BucketTable
              title="Table of answer times"
              testId="latency-table"
              granularity={stats.granularity}
              rows={rows}
              columns={[
                { label: 'p50', cell: (r) => ms(r.p50) },
                { label: 'p95', cell: (r) => ms(r.p95) },
                { label: 'p99', cell: (r) => ms(r.p99) },
              ]}
            />
          </figure>
        </>
      )}
    </section>
  );
}

/** A chart's data as its bucket-by-bucket rows. */
type Row = {
  label: string;
  start: string;
  attempts: number;
  successes: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
} & Failures;

/** The table behind a chart, one row per bucket: for screen readers and for copying. */
function BucketTable({
  title,
  testId,
  granularity,
  rows,
  columns,
}: {
  title: string;
  testId: string;
  granularity: WebhookStats['granularity'];
  rows: Row[];
  columns: Array<{ label: string; cell: (r: Row) => string | number }>;
}) {
  return (
    <details>
      <summary>{title}</summary>
      <ScrollTable>
        <table className="stats-table" data-testid={testId}>
          <thead>
            <tr>
              <th scope="col">{granularity === 'hour' ? 'Hour' : 'Day'}</th>
              {columns.map((c) => (
                <th key={c.label} scope="col">
                  {c.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.start}>
                <th scope="row">
                  <time dateTime={r.start}>{r.label}</time>
                </th>
                {columns.map((c) => (
                  <td key={c.label}>{c.cell(r)}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </ScrollTable>
    </details>
  );
}

/** The overview's table: each endpoint's totals over the chosen period, worst first, linked to its page. */
export function EndpointHealthTable({ stats, endpoints }: { stats: WebhookStats; endpoints: Endpoint[] }) {
  const byId = new Map(endpoints.map((e) => [e.id, e]));
  const rows = [...(stats.endpoints ?? [])].sort(
    (a, b) => a.successes / Math.max(1, a.attempts) - b.successes / Math.max(1, b.attempts) || b.attempts - a.attempts,
  );
  if (rows.length === 0) return <p className="muted">No attempts in this period.</p>;
  return (
    <ScrollTable>
      <table data-testid="endpoint-health-table">
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col">Attempts</th>
            <th scope="col">Succeeded</th>
            <th scope="col">Most frequent failure</th>
            <th scope="col">p95</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => {
            const worst = KINDS.map((k) => ({ ...k, n: r.failures[k.key] }))
              .filter((k) => k.n > 0)
              .sort((a, b) => b.n - a.n)[0];
            const endpoint = byId.get(r.endpoint_id);
            return (
              <tr key={r.endpoint_id} data-endpoint-id={r.endpoint_id}>
                <th scope="row">
                  <Link to={`/webhooks/endpoints/${r.endpoint_id}`}>{endpoint?.url ?? r.endpoint_id}</Link>
                </th>
                <td>{r.attempts}</td>
                <td>{rate(r)}</td>
                <td>{worst ? `${worst.label} (${worst.n})` : '—'}</td>
                <td>{ms(r.latency_ms.p95)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </ScrollTable>
  );
}
