import {
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  WEBHOOK_ID_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
} from '@payhooks/contract';
import { roleAtLeast, type Role } from '../../accounts/roles.ts';
import type { ApiAttempt, RequestHeaders } from '../../delivery/service.ts';
import { REDACTED, redactHeaderValues } from '../../endpoints/custom-headers.ts';

/**
 * An endpoint's custom header values often carry a credential for the receiver (Authorization,
 * an API key), so they are shown like secrets: in full to the roles that can edit the endpoint
 * (developer, admin), as `[redacted]` to a viewer, in the endpoint and in each attempt's
 * `request_headers`. The names stay: a viewer can still tell which headers went out.
 */
const seesHeaderValues = (role: Role) => roleAtLeast(role, 'developer');

/** The headers payhooks itself writes on a request; any other name is the endpoint's own (custom-headers.ts reserves these). */
const SENDER_HEADERS: ReadonlySet<string> = new Set([
  'Content-Type',
  'User-Agent',
  EVENT_ID_HEADER,
  SIGNATURE_HEADER,
  'traceparent',
  WEBHOOK_ID_HEADER,
  WEBHOOK_TIMESTAMP_HEADER,
  WEBHOOK_SIGNATURE_HEADER,
]);

export function endpointAsSeenBy<T extends { headers: Record<string, string> }>(role: Role, endpoint: T): T {
  return seesHeaderValues(role) ? endpoint : { ...endpoint, headers: redactHeaderValues(endpoint.headers) };
}

export function attemptAsSeenBy<T extends ApiAttempt | null>(role: Role, attempt: T): T {
  const sent = attempt?.request_headers;
  if (!attempt || !sent || seesHeaderValues(role)) return attempt;
  const headers: RequestHeaders = { ...sent };
  for (const name of Object.keys(headers)) if (!SENDER_HEADERS.has(name)) headers[name] = REDACTED;
  return { ...attempt, request_headers: headers };
}
