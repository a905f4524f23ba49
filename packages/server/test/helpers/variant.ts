import { randomBytes } from 'node:crypto';
import type { Config } from '../../src/config.ts';
import { createContext, type ServiceContext } from '../../src/context.ts';
import { buildApp, listeningUrl } from '../../src/api/app.ts';
import { apiClient, type ApiCall, type TestService } from './service.ts';

export { apiClient, type ApiCall };

export interface VariantService {
  url: string;
  ctx: ServiceContext;
  api: ApiCall;
  close(): Promise<void>;
}

/**
 * A second API process on the same database as `base`, with some settings changed (for example
 * `{ dev: true }` or `{ allowPrivateUrls: true }`): cheaper than a new database per setting.
 */
export async function startVariant(base: TestService, overrides: Partial<Config>): Promise<VariantService> {
  const config: Config = { ...base.ctx.config, ...overrides };
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  const ctx = createContext({
    listeningAt: () => (app ? listeningUrl(app) : undefined),
    config,
    database: base.ctx.database,
    clock: base.ctx.clock,
    logger: base.ctx.logger,
    encryptionKey: randomBytes(32),
  });
  app = await buildApp(ctx);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    ctx,
    api: apiClient(url),
    async close() {
      await app.close();
      await ctx.close();
    },
  };
}
