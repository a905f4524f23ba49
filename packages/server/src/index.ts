export { buildApp } from './api/app.ts';
export { loadConfig, type Config } from './config.ts';
export { openRuntime, type Runtime } from './runtime.ts';
export { openDatabase, type Database } from './db/client.ts';
export { migrate } from './db/migrate.ts';
export { createPlatform, createApiKey, revokeApiKey } from './tenancy/platforms.ts';
export { AppError, ConfigError } from './errors.ts';
export { ManualClock, systemClock, type Clock } from './clock.ts';
