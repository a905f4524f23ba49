import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Database } from './db/client.ts';
import { openStore } from './store.ts';
import { auditTrailWarning, connectionRole, type ConnectionRole } from './db/roles.ts';
import { createContext, type ServiceContext } from './context.ts';

export interface Runtime {
  ctx: ServiceContext;
  /**
   * The hourly partition maintenance may run here: the connection can act as the tables' owner
   * (or it is the embedded database). A runtime role leaves it to `payhooks maintain`.
   */
  maintenance: boolean;
  close(): Promise<void>;
}

/**
 * Opens the store (database, migrations, encryption key: store.ts) and builds the service
 * context on it: the start of `serve` and `worker`.
 */
export async function openRuntime(
  options: {
    config?: Config;
    clock?: Clock;
    logger?: Logger;
    database?: Database;
    migrate?: boolean /** Delivery loops this process runs (sizes the pool). */;
    workers?: number;
    /** The address this process's HTTP server listens on, once it does (`serve`). */
    listeningAt?: () => string | undefined;
  } = {},
): Promise<Runtime> {
  const store = await openStore(options);
  // The audit trail binds only a role that is neither its owner nor a superuser (db/roles.ts).
  let role: ConnectionRole | null;
  try {
    role = await connectionRole(store.database);
  } catch (err) {
    await store.close();
    throw err;
  }
  const warning = auditTrailWarning(role);
  if (warning) store.logger.warn({ role: role?.user }, warning);
  const maintenance = role === null || role.owner;
  if (!maintenance)
    store.logger.info(
      { role: role?.user },
      'running as a runtime role: partition maintenance (weeks ahead, retention, index rebuilds) is left to `payhooks maintain`, run hourly as the owner',
    );
  const ctx = createContext({
    config: store.config,
    database: store.database,
    clock: options.clock ?? systemClock,
    logger: store.logger,
    encryptionKey: store.encryptionKey,
    ...(options.listeningAt ? { listeningAt: options.listeningAt } : {}),
  });
  return {
    ctx,
    maintenance,
    async close() {
      await ctx.close();
      await store.close();
    },
  };
}
