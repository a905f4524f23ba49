import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceContext } from '../context.ts';
import { createPlatform, platformExists, type CreatedPlatform } from '../tenancy/platforms.ts';
import { createPortalUser, findUsersByEmail } from '../accounts/users.ts';

/** The demo portal user's email in development mode (when free). */
export const DEV_PORTAL_EMAIL = 'demo@payhooks.local';

/**
 * Development mode only: a demo Platform created on first start. Its keys and its portal user's
 * password are kept in `<dataDir>/dev-platform.json` (mode 0600) so every `npm start` can print
 * them again; in production they are shown once and only their hashes are kept.
 */
export async function ensureDevPlatform(ctx: ServiceContext): Promise<{ platform: CreatedPlatform; created: boolean }> {
  const file = join(ctx.config.dataDir, 'dev-platform.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as CreatedPlatform;
    if (await platformExists(ctx.database.db, saved.platform_id)) {
      if (saved.portal) return { platform: saved, created: false };
      // A data dir from before the portal: give its demo Platform a portal user, keep its keys.
      const user = await createPortalUser(ctx.database.db, {
        platformId: saved.platform_id,
        role: 'admin',
        email:
          (await findUsersByEmail(ctx.database.db, DEV_PORTAL_EMAIL)).length > 0
            ? `demo+${saved.platform_id.toLowerCase()}@payhooks.local`
            : DEV_PORTAL_EMAIL,
      });
      const upgraded = { ...saved, portal: { email: user.email, password: user.password } };
      writeFileSync(file, `${JSON.stringify(upgraded, null, 2)}\n`, { mode: 0o600 });
      return { platform: upgraded, created: false };
    }
  }
  // A database kept from an earlier data dir may hold the demo email already: then the default one.
  const free = (await findUsersByEmail(ctx.database.db, DEV_PORTAL_EMAIL)).length === 0;
  const platform = await createPlatform(ctx.database.db, 'Demo Platform', free ? { portalEmail: DEV_PORTAL_EMAIL } : {});
  mkdirSync(ctx.config.dataDir, { recursive: true });
  writeFileSync(file, `${JSON.stringify(platform, null, 2)}\n`, { mode: 0o600 });
  return { platform, created: true };
}

/** Development mode: an internal-API token kept in the data dir, so a local payment core (or curl) can publish. */
export function devInternalToken(dataDir: string): string {
  const file = join(dataDir, 'internal-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const token = randomBytes(32).toString('hex');
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return token;
}

/** Where the internal API's token came from: development mode generates one into the data dir. */
function internalTokenLine(ctx: ServiceContext): string {
  const token = ctx.config.internalToken;
  if (!token) return '(none: the internal API is off)';
  const file = join(ctx.config.dataDir, 'internal-token');
  const generated = existsSync(file) && readFileSync(file, 'utf8').trim() === token;
  return `${token}   (${generated ? `kept in ${file}` : 'PAYHOOKS_INTERNAL_TOKEN'}; publishes with POST /internal/v1/events)`;
}

export function devBanner(url: string, platform: CreatedPlatform, ctx: ServiceContext): string {
  const db = ctx.database.kind === 'pglite' ? `embedded PGlite in ${ctx.config.dataDir}` : 'PostgreSQL (DATABASE_URL)';
  return `
  payhooks is running in DEVELOPMENT MODE
  ---------------------------------------
  API            ${url}/api/v1   (OpenAPI: ${url}/api/v1/openapi.json)
  Health         ${url}/readyz
  Database       ${db}
  Demo Platform  ${platform.platform_id}   merchant ${platform.merchant_id}
  Sandbox key    ${platform.keys.sandbox}
  Live key       ${platform.keys.live}
  Internal token ${internalTokenLine(ctx)}

  Merchant Portal ${url}/portal/
    Email        ${platform.portal.email}
    Password     ${platform.portal.password}

  Development mode allows private and plain-http endpoint URLs. Never run it in production.

  Try next: register an endpoint (its whsec_ secret is shown only in this answer)
    curl -s ${url}/api/v1/webhook_endpoints \\
      -H 'Authorization: Bearer ${platform.keys.sandbox}' -H 'Content-Type: application/json' \\
      -d '{"url":"http://127.0.0.1:4000/webhooks","enabled_events":["*"]}'

  Then make a sandbox payment succeed for real; the in-process worker delivers its events
    npx payhooks trigger payment.succeeded --api-key ${platform.keys.sandbox} --url ${url}
    curl -s ${url}/api/v1/webhook_deliveries -H 'Authorization: Bearer ${platform.keys.sandbox}'
`;
}
