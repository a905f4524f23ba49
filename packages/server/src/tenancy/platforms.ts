import { and, asc, count, eq, isNull, ne, or } from 'drizzle-orm';
import { OPERATOR_PLATFORM_ID, isOperatorPlatform } from '../scope.ts';
import { apiKeys, merchants, platforms, type Environment } from '../db/schema.ts';
import type { Db, Queryable } from '../db/client.ts';
import { newId } from '../ids.ts';
import { DISPLAY_PREFIX_LENGTH, generateApiKey, hashApiKey } from '../security/api-keys.ts';
import { createPortalUser } from '../accounts/users.ts';
import type { ScryptCost } from '../accounts/passwords.ts';
import type { AuditSubject, AuditTrail } from '../audit/trail.ts';

/** Who runs an operator command, for the audit trail (CLI admin commands pass one). */
export interface AuditedBy {
  trail: AuditTrail;
  by: Omit<AuditSubject, 'platformId' | 'environment'>;
}

export interface CreatedKey {
  id: string;
  environment: Environment;
  /** The full key: shown once, never stored. */
  key: string;
  prefix: string;
}

export interface CreatedPlatform {
  platform_id: string;
  merchant_id: string;
  keys: { sandbox: string; live: string };
  /** The first Merchant Portal user; its password is shown once, here. */
  portal: { email: string; password: string };
}

/**
 * Creates a Platform with one merchant, one key per environment and its first portal user, in
 * one transaction. Without `portalEmail` the user is `admin+<platform id>@payhooks.local`
 * (lower case), unique by construction; the operator hands it over with the password.
 */
export async function createPlatform(
  db: Db,
  name: string,
  options: { portalEmail?: string | undefined; portalPassword?: string | undefined; passwordCost?: ScryptCost; audit?: AuditedBy } = {},
): Promise<CreatedPlatform> {
  return db.transaction(async (tx) => {
    const platformId = newId('platform');
    const merchantId = newId('merchant');
    await tx.insert(platforms).values({ id: platformId, name });
    await tx.insert(merchants).values({ id: merchantId, platformId, name });
    const sandbox = await createApiKey(tx, platformId, 'sandbox');
    const live = await createApiKey(tx, platformId, 'live');
    const user = await createPortalUser(
      tx,
      {
        platformId,
        email: options.portalEmail ?? `admin+${platformId.toLowerCase()}@payhooks.local`,
        role: 'admin',
        password: options.portalPassword,
      },
      options.passwordCost,
    );
    if (options.audit) {
      const subject = { ...options.audit.by, platformId, environment: null };
      await options.audit.trail.record(tx, subject, {
        action: 'platform.create',
        resourceType: 'platform',
        resourceId: platformId,
        changes: { name, merchant_id: merchantId, first_user: user.email },
      });
      for (const key of [sandbox, live])
        await options.audit.trail.record(tx, { ...subject, environment: key.environment }, apiKeyEntry('create', key));
      await options.audit.trail.record(tx, subject, {
        action: 'portal_user.create',
        resourceType: 'portal_user',
        resourceId: user.id,
        changes: { email: user.email, role: user.role },
      });
    }
    return {
      platform_id: platformId,
      merchant_id: merchantId,
      keys: { sandbox: sandbox.key, live: live.key },
      portal: { email: user.email, password: user.password },
    };
  });
}

const apiKeyEntry = (verb: 'create' | 'revoke', key: { id: string; prefix: string }) => ({
  action: `api_key.${verb}`,
  resourceType: 'api_key',
  resourceId: key.id,
  changes: { prefix: key.prefix },
});

export async function createApiKey(db: Queryable, platformId: string, environment: Environment, audit?: AuditedBy): Promise<CreatedKey> {
  const key = generateApiKey(environment);
  const id = newId('apiKey');
  const prefix = key.slice(0, DISPLAY_PREFIX_LENGTH);
  await db.insert(apiKeys).values({ id, platformId, environment, prefix, keyHash: hashApiKey(key) });
  const created = { id, environment, key, prefix };
  if (audit) await audit.trail.record(db, { ...audit.by, platformId, environment }, apiKeyEntry('create', created));
  return created;
}

/** False for the reserved operator Platform too: only the internal API's operator routes reach it. */
export async function platformExists(db: Queryable, platformId: string): Promise<boolean> {
  if (isOperatorPlatform(platformId)) return false;
  const rows = await db.select({ id: platforms.id }).from(platforms).where(eq(platforms.id, platformId));
  return rows.length > 0;
}

export type RevokeResult = { revoked: { id: string; prefix: string } } | { error: 'not_found' | 'ambiguous'; matches: number };

/**
 * Revokes a key named by its id (`key_…`), by the full key, or by its 12-character display
 * prefix (`sk_live_AbCd`). A prefix matching several keys revokes none.
 */
export async function revokeApiKey(db: Db, idOrPrefix: string, now: Date, audit?: AuditedBy): Promise<RevokeResult> {
  const where = idOrPrefix.startsWith('key_')
    ? eq(apiKeys.id, idOrPrefix)
    : or(eq(apiKeys.keyHash, hashApiKey(idOrPrefix)), eq(apiKeys.prefix, idOrPrefix));
  const rows = await db
    .select({ id: apiKeys.id, prefix: apiKeys.prefix, platformId: apiKeys.platformId, environment: apiKeys.environment })
    .from(apiKeys)
    .where(where);
  if (rows.length === 0) return { error: 'not_found', matches: 0 };
  if (rows.length > 1) return { error: 'ambiguous', matches: rows.length };
  const key = rows[0]!;
  // Revoking again keeps the first revocation time (it is the audit record of when access ended).
  await db.transaction(async (tx) => {
    await tx
      .update(apiKeys)
      .set({ revokedAt: now })
      .where(and(eq(apiKeys.id, key.id), isNull(apiKeys.revokedAt)));
    if (audit)
      await audit.trail.record(tx, { ...audit.by, platformId: key.platformId, environment: key.environment }, apiKeyEntry('revoke', key));
  });
  return { revoked: { id: key.id, prefix: key.prefix } };
}

export interface PlatformSummary {
  id: string;
  name: string;
  created_at: string;
  /** Keys not revoked, per environment. */
  active_keys: { live: number; sandbox: number };
}

/** Every Platform, oldest first, with how many unrevoked keys it has (`payhooks admin list-platforms`). */
export async function listPlatforms(db: Queryable): Promise<PlatformSummary[]> {
  const rows = await db
    .select({ id: platforms.id, name: platforms.name, createdAt: platforms.createdAt })
    .from(platforms)
    .where(ne(platforms.id, OPERATOR_PLATFORM_ID))
    .orderBy(asc(platforms.createdAt), asc(platforms.id));
  const counts = await db
    .select({ platformId: apiKeys.platformId, environment: apiKeys.environment, n: count() })
    .from(apiKeys)
    .where(isNull(apiKeys.revokedAt))
    .groupBy(apiKeys.platformId, apiKeys.environment);
  return rows.map((p) => {
    const active = { live: 0, sandbox: 0 };
    for (const c of counts) if (c.platformId === p.id) active[c.environment] = Number(c.n);
    return { id: p.id, name: p.name, created_at: p.createdAt.toISOString(), active_keys: active };
  });
}

export interface KeySummary {
  id: string;
  platform_id: string;
  environment: Environment;
  /** The first characters of the key (`sk_live_AbCd`): enough to recognise it, never the key. */
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

/**
 * API keys by id and display prefix, oldest first (`payhooks admin list-keys`). Only the hash of
 * a key is stored, so the key itself can't be shown; this is what `revoke-key` takes.
 */
export async function listApiKeys(db: Queryable, platformId?: string): Promise<KeySummary[]> {
  const rows = await db
    .select({
      id: apiKeys.id,
      platformId: apiKeys.platformId,
      environment: apiKeys.environment,
      prefix: apiKeys.prefix,
      createdAt: apiKeys.createdAt,
      revokedAt: apiKeys.revokedAt,
    })
    .from(apiKeys)
    .where(platformId === undefined ? undefined : eq(apiKeys.platformId, platformId))
    .orderBy(asc(apiKeys.platformId), asc(apiKeys.createdAt), asc(apiKeys.id));
  return rows.map((k) => ({
    id: k.id,
    platform_id: k.platformId,
    environment: k.environment,
    prefix: k.prefix,
    created_at: k.createdAt.toISOString(),
    revoked_at: k.revokedAt?.toISOString() ?? null,
  }));
}
