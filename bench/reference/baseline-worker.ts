/**
 * The baseline of the reference benchmark: the same work done the way a team would without
 * payhooks, with graphile-worker: one job per delivery that signs the body like payhooks does
 * (HMAC-SHA256 of `t.body`, the Service-Signature header), POSTs it with undici, and inserts an
 * attempt row; a non-2xx answer fails the job so graphile-worker retries it.
 *
 * Tuned per graphile-worker's performance docs (worker.graphile.org/docs/performance): a local
 * queue (`localQueue.size` 500, as in their benchmark configuration), batched completion and
 * failure (`completeJobBatchDelay` / `failJobBatchDelay` 0), prepared statements (the default),
 * a pool of concurrency + 2.
 */
import { Logger, run, type Runner, type Task } from 'graphile-worker';
import pg from 'pg';
import { Agent, request } from 'undici';
import { signPayload } from '../../packages/contract/src/signature.ts';

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const DATABASE_URL = process.env.BENCH_DATABASE_URL!;

const agent = new Agent({ connections: CONCURRENCY, keepAliveTimeout: 10_000 });

interface Payload {
  event_id: string;
  endpoint_id: string;
  url: string;
  secret: string;
  body: string;
}

const deliver: Task = async (raw, helpers) => {
  const p = raw as Payload;
  const bytes = Buffer.from(p.body, 'utf8');
  const started = new Date();
  const t0 = performance.now();
  let status: number | null = null;
  let responseBody: string | null = null;
  let error: string | null = null;
  try {
    const res = await request(p.url, {
      method: 'POST',
      dispatcher: agent,
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'baseline/1',
        'service-event-id': p.event_id,
        'service-signature': signPayload(p.secret, Math.floor(Date.now() / 1000), bytes),
      },
      body: bytes,
    });
    status = res.statusCode;
    responseBody = (await res.body.text()).slice(0, 2048);
  } catch (err) {
    error = String(err);
  }
  await helpers.withPgClient((client) =>
    client.query(
      'INSERT INTO bench_attempts (event_id, endpoint_id, job_id, started_at, duration_ms, status_code, response_body, error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [p.event_id, p.endpoint_id, helpers.job.id, started, Math.round(performance.now() - t0), status, responseBody, error],
    ),
  );
  if (status === null || status < 200 || status >= 300) throw new Error(error ?? `HTTP ${status}`);
};

let runner: Runner | undefined;

async function start(): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  await client.query(`CREATE TABLE IF NOT EXISTS bench_attempts (
    id bigserial PRIMARY KEY, event_id text NOT NULL, endpoint_id text NOT NULL, job_id text NOT NULL,
    started_at timestamptz NOT NULL, duration_ms integer NOT NULL, status_code integer, response_body text, error text)`);
  await client.query('CREATE INDEX IF NOT EXISTS bench_attempts_event_idx ON bench_attempts (event_id)');
  await client.end();
  runner = await run({
    taskList: { deliver },
    noHandleSignals: true,
    logger: new Logger(() => () => {}),
    preset: {
      worker: {
        connectionString: DATABASE_URL,
        concurrentJobs: CONCURRENCY,
        maxPoolSize: CONCURRENCY + 2,
        pollInterval: 1000,
        localQueue: { size: 500 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
  });
  process.send!({ type: 'ready' });
}

process.on('message', (m: { type: string }) => {
  if (m.type === 'stop') void runner?.stop().finally(() => process.exit(0));
});
start().catch((err) => {
  process.send!({ type: 'error', message: String(err?.stack ?? err) });
  process.exit(1);
});
