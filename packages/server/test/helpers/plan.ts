import pg from 'pg';
import { drizzle } from 'drizzle-orm/node-postgres';
import * as schema from '../../src/db/schema.ts';
import type { Database, Db } from '../../src/db/client.ts';
import { DeliveryService } from '../../src/delivery/service.ts';
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
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
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

/** Rows of `table` and of its partitions (`table_…`) that the plan read. */
export function rowsReadOfTable(plan: PlanNode, table: string): number {
  const names = new Set(
    planNodes(plan)
      .map((n) => n['Relation Name'])
      .filter((name): name is string => name === table || (name?.startsWith(`${table}_`) ?? false)),
  );
  return [...names].reduce((sum, name) => sum + rowsRead(plan, name), 0);
}

/** Shared buffers the whole plan touched (the root's count includes its children's). */
export function buffersOf(plan: PlanNode): number {
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

/**
 * A pg client that runs `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` of every SELECT before the
 * SELECT itself and keeps the plans: the statements a service really issues, with their values.
 */
export class ExplainingClient extends pg.Client {
  plans: Array<{ text: string; plan: PlanNode }> = [];
  override query(config: any, values?: any, callback?: any): any {
    const text: string = typeof config === 'string' ? config : config.text;
    const params = typeof config === 'string' ? values : (config.values ?? values);
    if (/^\s*(select|with)\b/i.test(text))
      return (async () => {
        const explained = await super.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params);
        this.plans.push({ text, plan: (explained.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan });
        return super.query(config, values);
      })();
    return super.query(config, values, callback);
  }
}

/**
 * drizzle on `client` (an ExplainingClient, so every read is explained), and the delivery log's
 * service reading through it: the API's own queries, with their values, under EXPLAIN.
 */
export function explainedReads(svc: TestService, client: pg.Client): { db: Db; deliveries: DeliveryService } {
  const db = drizzle(client, { schema }) as unknown as Db;
  const database = Object.create(svc.ctx.database, { db: { value: db } }) as Database;
  const deliveries = new DeliveryService({
    database,
    clock: svc.ctx.clock,
    secrets: null as never,
    sender: null as never,
    audit: svc.ctx.audit,
    leaseMs: 60_000,
  });
  return { db, deliveries };
}
