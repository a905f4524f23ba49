import type { TestService } from './service.ts';

/** A node of `EXPLAIN (ANALYZE, FORMAT JSON)`'s plan, as far as the plan tests read it. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
export function planNodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(planNodes)];
}

/** Rows of `relation` that the plan's nodes produced or filtered away, over all their loops. */
export function rowsRead(plan: PlanNode, relation: string): number {
  return planNodes(plan)
    .filter((n) => n['Relation Name'] === relation)
    .reduce(
      (sum, n) =>
        sum +
        ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0) + (n['Rows Removed by Index Recheck'] ?? 0)) *
          (n['Actual Loops'] ?? 1),
      0,
    );
}

/**
 * Endpoints of `key`'s Platform, subscribed to everything, at `paths` on a port nothing listens
 * on: the plan tests read statements' plans and never deliver.
 */
export async function endpointsNobodyServes(svc: TestService, key: string, paths: string[]): Promise<void> {
  for (const path of paths) {
    const res = await svc.api(key, 'POST', '/api/v1/webhook_endpoints', { url: `http://127.0.0.1:9${path}`, enabled_events: ['*'] });
    if (res.status !== 201) throw new Error(`creating the endpoint ${path}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  }
}
