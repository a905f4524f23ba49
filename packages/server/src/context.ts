import type { Logger } from 'pino';
import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { Database } from './db/client.ts';
import { SecretBox } from './security/encryption.ts';
import { EndpointService } from './endpoints/service.ts';

/**
 * Everything a request handler or worker needs, built once at start and passed down
 * explicitly (no module-level singletons, so tests can run many services in one process).
 */
export interface ServiceContext {
  config: Config;
  database: Database;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  endpoints: EndpointService;
}

export function createContext(options: { config: Config; database: Database; clock: Clock; logger: Logger; encryptionKey: Buffer }): ServiceContext {
  const { config, database, clock, logger } = options;
  const secrets = new SecretBox(options.encryptionKey);
  const urlPolicy = { allowHttp: config.dev || config.allowHttpUrls, allowPrivate: config.dev || config.allowPrivateUrls };
  return {
    config,
    database,
    clock,
    logger,
    secrets,
    endpoints: new EndpointService(database.db, secrets, urlPolicy, clock),
  };
}
