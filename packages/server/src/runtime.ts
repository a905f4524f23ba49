import type { Logger } from 'pino';
import type { Config } from './config.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Database } from './db/client.ts';
import { openStore } from './store.ts';
import { createContext, type ServiceContext } from './context.ts';

export interface Runtime {
  ctx: ServiceContext;
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
  } = {},
): Promise<Runtime> {
  const store = await openStore(options);
  const ctx = createContext({
    config: store.config,
    database: store.database,
    clock: options.clock ?? systemClock,
    logger: store.logger,
    encryptionKey: store.encryptionKey,
  });
  return {
    ctx,
    async close() {
      await ctx.close();
      await store.close();
    },
  };
}
