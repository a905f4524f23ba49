import type { FastifyRequest } from 'fastify';
import type { RequestOrigin } from '../scope.ts';

/**
 * Where a request came from, for the audit trail: the client's address as PAYHOOKS_TRUST_PROXY
 * resolves it (`req.ip`), its User-Agent (trimmed by the trail) and our request id.
 */
export function requestOrigin(req: FastifyRequest): RequestOrigin {
  const agent = req.headers['user-agent'];
  return { ip: req.ip ?? null, userAgent: typeof agent === 'string' ? agent : null, requestId: req.id };
}
