import { createHash } from 'node:crypto';
import { and, eq, gt, lte } from 'drizzle-orm';
import { idempotencyKeys } from '../db/schema.ts';
import type { Tx } from '../db/client.ts';
import { AppError } from '../errors.ts';
import type { ServiceContext } from '../context.ts';
import type { Scope } from '../scope.ts';

import { IDEMPOTENCY_WINDOW_MS } from '../idempotency-window.ts';

export { IDEMPOTENCY_WINDOW_MS };

export interface StoredResponse {
  status: number;
  body: unknown;
  replayed: boolean;
}

class LostRace extends Error {}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * Stripe-style `Idempotency-Key`: the first successful response to (scope, key) is stored for
 * 24 h in the same transaction as the work it describes, and replayed for the same request.
 * The same key with a different request is a 409. Two concurrent first requests: the second
 * one's insert waits on the first's row lock, finds it, rolls its own work back and replays.
 * Failed requests are not stored, so a corrected retry with the same key goes through.
 */
export async function withIdempotency(
  ctx: ServiceContext,
  scope: Scope,
  key: string | undefined,
  request: { method: string; path: string; body: unknown },
  run: (tx: Tx) => Promise<{ status: number; body: unknown }>,
): Promise<StoredResponse> {
  const { db } = ctx.database;
  if (key === undefined) return { ...(await db.transaction(run)), replayed: false };
  if (key.length === 0 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw new AppError(
      'invalid_request',
      'idempotency_key_invalid',
      'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.',
      { param: 'Idempotency-Key' },
    );
  }
  const hash = createHash('sha256')
    .update(`${request.method} ${request.path}\n${canonical(request.body)}`)
    .digest('hex');
  const aad = `${scope.platformId}/${scope.environment}/${key}`;
  const replay = async (): Promise<StoredResponse | null> => {
    const since = new Date(ctx.clock.now().getTime() - IDEMPOTENCY_WINDOW_MS);
    const [row] = await db
      .select()
      .from(idempotencyKeys)
      .where(
        and(
          eq(idempotencyKeys.platformId, scope.platformId),
          eq(idempotencyKeys.environment, scope.environment),
          eq(idempotencyKeys.key, key),
          gt(idempotencyKeys.createdAt, since),
        ),
      );
    if (!row) return null;
    if (row.requestHash !== hash) {
      throw new AppError(
        'conflict',
        'idempotency_key_reused',
        'This Idempotency-Key was used with a different request in the last 24 hours; use a new key for a new request.',
        {
          param: 'Idempotency-Key',
        },
      );
    }
    return { status: row.responseStatus, body: JSON.parse(ctx.secrets.decrypt(row.responseBody, aad)), replayed: true };
  };

  const earlier = await replay();
  if (earlier) return earlier;
  try {
    return await db.transaction(async (tx) => {
      const result = await run(tx);
      const now = ctx.clock.now();
      const expired = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
      const values = {
        platformId: scope.platformId,
        environment: scope.environment,
        key,
        requestHash: hash,
        responseStatus: result.status,
        // Encrypted: a create response carries the endpoint's signing secret.
        responseBody: ctx.secrets.encrypt(JSON.stringify(result.body), aad),
        createdAt: now,
      };
      const stored = await tx
        .insert(idempotencyKeys)
        .values(values)
        .onConflictDoUpdate({
          target: [idempotencyKeys.platformId, idempotencyKeys.environment, idempotencyKeys.key],
          set: {
            requestHash: values.requestHash,
            responseStatus: values.responseStatus,
            responseBody: values.responseBody,
            createdAt: now,
          },
          // The exact complement of replay()'s `createdAt > now - 24 h`: a record is either
          // replayed or replaced, never neither (which answered 409 in_use at exactly 24 h).
          setWhere: lte(idempotencyKeys.createdAt, expired),
        })
        .returning({ key: idempotencyKeys.key });
      if (stored.length === 0) throw new LostRace();
      return { ...result, replayed: false };
    });
  } catch (err) {
    if (!(err instanceof LostRace)) throw err;
    const winner = await replay();
    if (!winner)
      throw new AppError('conflict', 'idempotency_key_in_use', 'Another request with this Idempotency-Key is in progress; retry shortly.');
    return winner;
  }
}
