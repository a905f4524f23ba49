import type { ConnectionOptions } from 'node:tls';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { loadConfig, type Config } from '../../src/config.ts';
import { ManualClock, systemClock, type Clock } from '../../src/clock.ts';
import { createContext, type ServiceContext } from '../../src/context.ts';
import { buildApp, listeningUrl } from '../../src/api/app.ts';
import { createLogger } from '../../src/logging.ts';
import { createPlatform, type CreatedPlatform } from '../../src/tenancy/platforms.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import type { Resolver } from '../../src/delivery/safe-lookup.ts';

export interface TestService {
  url: string;
  ctx: ServiceContext;
  testDb: TestDatabase;
  app: FastifyInstance;
  /** A new Platform with its keys. */
  platform(name?: string): Promise<CreatedPlatform>;
  /** `fetch` against the service with an API key. */
  api: ApiCall;
  close(): Promise<void>;
}

/**
 * scrypt at N=2^10 for the portal users of in-process services: the suite creates hundreds of
 * Platforms (each with a portal user) and makes over a hundred sign-in guesses, at ~100 ms of CPU
 * each at the real cost. What is tested there is the sign-in and its limits; the real cost is
 * tested in unit/passwords.test.ts, and every spawned `payhooks` process uses it.
 */
const TEST_PASSWORD_COST = { N: 1 << 10, r: 8, p: 1 };

/**
 * A real service on a real database (this run's backend) listening on 127.0.0.1:0. Tests talk
 * to it over HTTP like a merchant would.
 */
export async function startService(
  overrides: Partial<Config> = {},
  options: { clock?: Clock; resolver?: Resolver; logger?: Logger; tls?: ConnectionOptions } = {},
): Promise<TestService> {
  const testDb = await createTestDatabase();
  const config = loadConfig({}, { logLevel: 'silent', port: 0, databaseUrl: testDb.databaseUrl, dataDir: '/nonexistent', ...overrides });
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  const ctx = createContext({
    listeningAt: () => (app ? listeningUrl(app) : undefined),
    config,
    database: testDb.database,
    clock: options.clock ?? systemClock,
    logger: options.logger ?? createLogger(config),
    encryptionKey: randomBytes(32),
    passwordCost: TEST_PASSWORD_COST,
    ...(options.resolver ? { resolver: options.resolver } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
  });
  app = await buildApp(ctx);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url: address,
    ctx,
    testDb,
    app,
    platform: (name = 'Test Platform') => createPlatform(ctx.database.db, name, { passwordCost: ctx.passwordCost }),
    api: apiClient(address),
    async close() {
      await app.close();
      await ctx.close();
      await testDb.dispose();
    },
  };
}

export { ManualClock };

export type ApiCall = (
  key: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; headers: Headers; body: any }>;

/** `fetch` against `baseUrl` with an API key, like `TestService.api`. */
export function apiClient(baseUrl: string): ApiCall {
  return async (key, method, path, body, headers = {}) => {
    const h: Record<string, string> = { ...headers };
    if (key !== undefined) h.authorization = `Bearer ${key}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text so the assertion shows it
    }
    return { status: res.status, headers: res.headers, body: parsed };
  };
}
