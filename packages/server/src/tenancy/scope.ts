import type { Environment } from '../db/schema.ts';

/**
 * Who is calling: the Platform and environment an API key is bound to. Every query on
 * tenant data takes a Scope and filters by both, so another Platform's (or environment's)
 * rows are indistinguishable from rows that don't exist (spec 4.1 rule 1, 5.2).
 */
export interface Scope {
  platformId: string;
  environment: Environment;
  apiKeyId: string;
}
