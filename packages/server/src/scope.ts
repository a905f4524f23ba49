import type { ActorType, Environment } from './db/schema.ts';

export type { ActorType };

/**
 * Who acts, as the audit trail names them: a portal user (ours), the payment service's own user
 * in an embedded portal session, an API key, the internal API's token, an operator at the CLI,
 * payhooks itself (automatic endpoint disable), or a customer on the hosted checkout page.
 */
export interface Actor {
  type: ActorType;
  /** `usr_…`, the payment service's user id, `key_…`, the operator's login name; null when unknown. */
  id: string | null;
  email?: string | null;
  name?: string | null;
}

/** Where a request came from: the client's address as the proxy settings resolve it, its user agent, our request id. */
export interface RequestOrigin {
  ip: string | null;
  userAgent: string | null;
  requestId: string | null;
}

/**
 * Who is calling: the Platform and environment every query on tenant data is filtered by, so
 * another Platform's (or environment's) rows are indistinguishable from rows that don't exist
 * (spec 4.1 rule 1, 5.2), and the actor the audit trail records for each change.
 */
export interface Scope {
  platformId: string;
  environment: Environment;
  actor: Actor;
  /** Set for HTTP requests; absent for the CLI and background jobs. */
  origin?: RequestOrigin | undefined;
}

/**
 * The reserved Platform that holds operator endpoints (migration 0035, tenancy/operator-endpoints.ts).
 * Its ids are not of the generated form (24 base62 characters), so no generated id meets them.
 * It has no API key and no portal user, and `platformExists` denies it, so no merchant-facing
 * read or write reaches it; only the internal API's operator routes do.
 */
export const OPERATOR_PLATFORM_ID = 'plt_operator';
export const OPERATOR_MERCHANT_ID = 'mch_operator';

export const isOperatorPlatform = (platformId: string): boolean => platformId === OPERATOR_PLATFORM_ID;
