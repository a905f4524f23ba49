import { randomBytes } from 'node:crypto';

/**
 * Every response carries `Request-Id` (as Stripe's do): the id of the request's log lines, for
 * a merchant to quote in a support request. Generated here, never taken from the client, so a
 * caller can't make its lines look like another's.
 */
export const REQUEST_ID_HEADER = 'Request-Id';

export const newRequestId = (): string => `req_${randomBytes(12).toString('base64url')}`;
