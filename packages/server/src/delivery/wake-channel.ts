/**
 * The NOTIFY channel that wakes delivery workers when deliveries are queued: publishing (the
 * HTTP path, batches and the `payhooks.publish_event` SQL function of migration 0014) sends on
 * it, every worker listens on it. The queue is delivery's, so its name lives here.
 */
export const WAKE_CHANNEL = 'payhooks_deliveries';
