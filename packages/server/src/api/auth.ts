import { eq } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import { apiKeys } from '../db/schema.ts';
import type { Db } from '../db/client.ts';
import { AppError } from '../errors.ts';
import { environmentOfKey, hashApiKey } from '../security/api-keys.ts';
import type { Scope } from '../scope.ts';
import { requestOrigin } from './request-origin.ts';

const unauthorized = (code: string, message: string) =>
  new AppError('authentication', code, message, { headers: { 'www-authenticate': 'Bearer realm="payhooks"' } });

/**
 * `Authorization: Bearer sk_live_…|sk_test_…` -> the key's Scope. The key is looked up by its
 * SHA-256 hash, so the comparison happens on hashes in an index, not on secret bytes.
 */
export async function authenticate(db: Db, req: FastifyRequest): Promise<Scope> {
  const header = req.headers.authorization;
  if (!header) throw unauthorized('missing_api_key', 'No API key given. Send it as `Authorization: Bearer sk_test_…`.');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized('malformed_authorization', 'The Authorization header must be `Bearer <API key>`.');
  const key = m[1]!;
  if (!environmentOfKey(key)) throw unauthorized('invalid_api_key', 'Invalid API key: keys start with sk_live_ or sk_test_.');
  const [row] = await db
    .select()
    .from(apiKeys)
    .where(eq(apiKeys.keyHash, hashApiKey(key)));
  if (!row) throw unauthorized('invalid_api_key', `Invalid API key provided: ${key.slice(0, 12)}…`);
  if (row.revokedAt) throw unauthorized('api_key_revoked', `The API key ${row.prefix}… was revoked; create a new one.`);
  return { platformId: row.platformId, environment: row.environment, actor: { type: 'api_key', id: row.id }, origin: requestOrigin(req) };
}
