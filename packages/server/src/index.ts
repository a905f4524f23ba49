export { buildApp } from './api/app.ts';
export { loadConfig, type Config } from './config.ts';
export { openRuntime, type Runtime } from './runtime.ts';
export { openDatabase, type Database } from './db/client.ts';
export { migrate } from './db/migrate.ts';
export { createPlatform, createApiKey, revokeApiKey } from './tenancy/platforms.ts';
export { AppError, ConfigError } from './errors.ts';
export { ManualClock, systemClock, type Clock } from './clock.ts';
// Publishing from in-process code, inside the caller's own transaction (`database.db.transaction`).
export { WAKE_CHANNEL } from './delivery/wake-channel.ts';
export {
  publishEvent,
  publishEvents,
  PUBLISH_BATCH_MAX,
  type BatchEventInput,
  type BatchOutcome,
  type PublishResult,
} from './events/publish.ts';
export type { EventInput } from './events/envelope.ts';
export type { Tx } from './db/client.ts';
