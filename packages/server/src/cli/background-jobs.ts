import type { ServiceContext } from '../context.ts';

/**
 * The sweeps that run wherever delivery workers run (`serve` with its worker, `payhooks worker`):
 * checkout-session expiry, auto-disable of failing endpoints, and retention. Each is safe to run
 * in several processes at once (see their modules). Stopped in the order they were started.
 */
export function startBackgroundJobs(ctx: ServiceContext): { stop(): Promise<void> } {
  const jobs = [ctx.createExpiryJob(), ctx.createAutoDisableJob(), ctx.createRetentionJob()];
  for (const job of jobs) job.start();
  return {
    async stop() {
      for (const job of jobs) await job.stop();
    },
  };
}
