import { randomBytes } from 'node:crypto';
import type { Config } from '../../src/config.ts';
import { createContext, type ServiceContext } from '../../src/context.ts';
import { buildApp } from '../../src/api/app.ts';
import type { TestService } from './service.ts';

export type ApiCall = TestService['api'];

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
  const ctx = createContext({ config, database: base.ctx.database, clock: base.ctx.clock, logger: base.ctx.logger, encryptionKey: randomBytes(32) });
  const app = await buildApp(ctx);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    url,
    ctx,
    api: apiClient(url),
    async close() {
      await app.close();
      await (ctx as { close?: () => Promise<void> }).close?.();
    },
  };
}
