import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import type { Limit } from '../rate-limit.ts';
import { requestOrigin } from '../request-origin.ts';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The internal API's `onRequest` check: `Authorization: Bearer <PAYHOOKS_INTERNAL_TOKEN>`,
 * compared in constant time (over digests, so length differences don't leak either). Without
 * a configured token the internal routes answer 404. Runs before the body is validated, so an
 * unauthenticated caller learns nothing. Failed attempts are limited per client address like
 * failed API-key authentications (`failedAuth`), so the token can't be guessed at line rate.
 */
export function internalAuth(ctx: ServiceContext, failedAuth: Limit): (req: FastifyRequest) => Promise<void> {
  const expected = ctx.config.internalToken ? digest(ctx.config.internalToken) : null;
  return async (req) => {
    if (!expected)
      throw new AppError('not_found', 'route_not_found', 'The internal API is disabled: set PAYHOOKS_INTERNAL_TOKEN to enable it.');
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m || !timingSafeEqual(digest(m[1]!), expected)) {
      await failedAuth(req);
      throw new AppError(
        'authentication',
        'invalid_internal_token',
        'A valid `Authorization: Bearer <PAYHOOKS_INTERNAL_TOKEN>` is required.',
      );
    }
    // The internal token acts on any Platform: an entry of a refused call joins no Platform's trail.
    req.auditSubject = {
      platformId: null,
      environment: null,
      actor: { type: 'internal', id: 'internal_token' },
      origin: requestOrigin(req),
    };
  };
}
