import { and, eq, isNull } from 'drizzle-orm';
import type { Ed25519Jwk } from '@payhooks/contract';
import type { Db } from '../db/client.ts';
import { platforms, webhookEndpoints } from '../db/schema.ts';
import { notFound } from '../errors.ts';
import { livePublicKeys } from './service.ts';

export interface Jwks {
  keys: Ed25519Jwk[];
}

/**
 * A Platform's JWKS document: the public keys of its endpoints that sign with ed25519 (both
 * environments, disabled endpoints too: they sign again once enabled), each rotated-out key
 * until its overlap ends. Reads the public columns only, never a sealed private key. Keys are
 * ordered by endpoint, then new first, so the document (and its ETag) changes only when a key does.
 */
export async function platformJwks(db: Db, platformId: string, now: Date): Promise<Jwks> {
  const [platform] = await db.select({ id: platforms.id }).from(platforms).where(eq(platforms.id, platformId));
  if (!platform) throw notFound('platform', platformId, 'platform_id');
  const rows = await db
    .select({
      asymmetricSignature: webhookEndpoints.asymmetricSignature,
      signingPublicKey: webhookEndpoints.signingPublicKey,
      signingKeyCreatedAt: webhookEndpoints.signingKeyCreatedAt,
      previousSigningPublicKey: webhookEndpoints.previousSigningPublicKey,
      previousSigningKeyCreatedAt: webhookEndpoints.previousSigningKeyCreatedAt,
      previousSigningKeyExpiresAt: webhookEndpoints.previousSigningKeyExpiresAt,
    })
    .from(webhookEndpoints)
    .where(
      and(eq(webhookEndpoints.platformId, platformId), eq(webhookEndpoints.asymmetricSignature, true), isNull(webhookEndpoints.deletedAt)),
    )
    .orderBy(webhookEndpoints.id);
  return { keys: rows.flatMap((r) => livePublicKeys(r, now).map((k) => k.jwk)) };
}
