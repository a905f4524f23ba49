import { loadConfig } from '../config.ts';
import { ConfigError } from '../errors.ts';
import { openRuntime } from '../runtime.ts';
import { startMetricsServer } from '../api/metrics-server.ts';
import { onStopSignal } from './stop-signal.ts';
import { startBackgroundJobs } from './background-jobs.ts';

/** `payhooks worker`: delivery workers only, for scaling out on PostgreSQL. */
export async function workerCommand(options: { processes?: string }): Promise<void> {
  const cfg = loadConfig();
  if (!cfg.databaseUrl) {
    throw new ConfigError(
      'payhooks worker needs PostgreSQL: set DATABASE_URL. The embedded database can be opened by one process only, so with it `payhooks serve` runs the worker in-process.',
    );
  }
  const count = options.processes === undefined ? 1 : Number(options.processes);
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new ConfigError('--workers must be a whole number from 1 to 64.');
  const runtime = await openRuntime({ config: cfg, workers: count });
  const workers = Array.from({ length: count }, () => runtime.ctx.createWorker());
  await Promise.all(workers.map((w) => w.start()));
  const jobs = startBackgroundJobs(runtime.ctx, runtime);
  // Attempt counters live in this process: without a listener they could not be scraped.
  const metrics = cfg.metricsPort === undefined ? null : await startMetricsServer(runtime.ctx, { host: cfg.host, port: cfg.metricsPort });
  onStopSignal(runtime.ctx.logger, async () => {
    await metrics?.close();
    await jobs.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await runtime.close();
  });
  runtime.ctx.logger.info({ workers: workers.map((w) => w.id), metrics: metrics?.url ?? null }, 'payhooks workers started');
}
