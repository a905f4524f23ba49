/**
 * How one worker shares its attempt slots (PAYHOOKS_WORKER_CONCURRENCY) between tenants and
 * endpoints, so a Platform with many slow or dead endpoints can't starve the others:
 *
 * - **per endpoint**: at most PAYHOOKS_ENDPOINT_CONCURRENCY attempts in flight, and only ONE
 *   while the endpoint is throttled (below);
 * - **per Platform**: rows claimed but not finished (in flight or waiting locally for their
 *   endpoint's slot) stay under `platformCap`, a share of the worker; a Platform at its cap is
 *   left out of the next claims, so other Platforms' due rows are found at once;
 * - **round robin in a claim**: the batch takes each Platform's oldest due row first, then each
 *   one's second, and so on, instead of the oldest rows overall;
 * - **circuit breaker**: an endpoint with THROTTLE_AFTER_TIMEOUTS timeouts in a row and no answer
 *   in between is throttled to one attempt at a time; every attempt is then a half-open probe,
 *   and its first answer (any HTTP status) lifts the throttle. Failing fast (refused, DNS, a 500)
 *   doesn't hold a slot, so only timeouts count.
 */
export const THROTTLE_AFTER_TIMEOUTS = 3;

export interface FairnessLimits {
  endpointCap: number;
  platformCap: number;
}

/** A Platform's share of one worker's slots, never below one endpoint's cap. */
export function fairnessLimits(config: { endpointConcurrency: number; workerConcurrency: number; platformShare: number }): FairnessLimits {
  const platformCap = Math.max(
    Math.min(config.endpointConcurrency, config.workerConcurrency),
    Math.ceil(config.workerConcurrency * config.platformShare),
  );
  return { endpointCap: config.endpointConcurrency, platformCap: Math.min(platformCap, config.workerConcurrency) };
}

/** Attempts an endpoint may have in flight in one worker. */
export function endpointCapOf(limits: FairnessLimits, throttled: boolean): number {
  return throttled ? 1 : limits.endpointCap;
}
