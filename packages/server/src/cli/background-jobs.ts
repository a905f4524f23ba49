import type { ServiceContext } from '../context.ts';

/**
 * The sweeps that run wherever delivery workers run (`serve` with its worker, `payhooks worker`):
 * checkout-session expiry, auto-disable of failing endpoints, and retention. Each is safe to run
 * in several processes at once (see their modules). Stopped in the order they were started.
 * Retention creates and drops partitions, which only the tables' owner may: a process connected
 * as the runtime role (`maintenance` false) leaves it to `payhooks maintain`.
 */
export function startBackgroundJobs(ctx: ServiceContext, options: { maintenance: boolean }): { stop(): Promise<void> } {
  const jobs = [ctx.createExpiryJob(), ctx.createAutoDisableJob(), ...(options.maintenance ? [ctx.createRetentionJob()] : [])];
  for (const job of jobs) job.start();
  return {
    async stop() {
      for (const job of jobs) await job.stop();
    },
  };
}
