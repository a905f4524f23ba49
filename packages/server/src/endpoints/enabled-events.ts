import { OPERATIONAL_EVENT_TYPES, REQUIRED_LIVE_EVENT_TYPES, WILDCARD_EVENT_TYPE, isEventType } from '@payhooks/contract';
import { AppError } from '../errors.ts';
import type { Environment } from '../db/schema.ts';

/**
 * Validates a subscription list: each entry a catalog type (spec 6.1) or `*`; duplicates
 * dropped. A live endpoint must cover spec 4.1 rule 3's four types (or `*`). An operator
 * endpoint (endpoints/operator-endpoints.ts) hears only of endpoints' health, so it takes only
 * those types, and none is required.
 */
export function validateEnabledEvents(
  list: readonly string[],
  environment: Environment,
  kind: 'merchant' | 'operator' = 'merchant',
): string[] {
  const out: string[] = [];
  list.forEach((type, i) => {
    if (kind === 'operator' && type !== WILDCARD_EVENT_TYPE && !(OPERATIONAL_EVENT_TYPES as readonly string[]).includes(type)) {
      throw new AppError(
        'invalid_request',
        'event_type_unknown',
        `An operator endpoint receives only ${OPERATIONAL_EVENT_TYPES.join(', ')} (or '*' for all of them); '${type}' is not one.`,
        { param: `enabled_events[${i}]` },
      );
    }
    if (type !== WILDCARD_EVENT_TYPE && !isEventType(type)) {
      throw new AppError(
        'invalid_request',
        'event_type_unknown',
        `'${type}' is not an event type. Use '*' or types from the catalog (GET /api/v1/openapi.json lists them).`,
        {
          param: `enabled_events[${i}]`,
        },
      );
    }
    if (!out.includes(type)) out.push(type);
  });
  if (kind === 'merchant' && environment === 'live' && !out.includes(WILDCARD_EVENT_TYPE)) {
    const missing = REQUIRED_LIVE_EVENT_TYPES.filter((t) => !out.includes(t));
    if (missing.length > 0) {
      throw new AppError(
        'unprocessable',
        'live_subscription_incomplete',
        `A live endpoint must be subscribed to ${REQUIRED_LIVE_EVENT_TYPES.join(', ')} (or '*'). Missing: ${missing.join(', ')}.`,
        { param: 'enabled_events' },
      );
    }
  }
  return out;
}

/** True when an endpoint subscribed to `enabled` receives events of `type`. */
export function subscribes(enabled: readonly string[], type: string): boolean {
  return enabled.includes(WILDCARD_EVENT_TYPE) || enabled.includes(type);
}
