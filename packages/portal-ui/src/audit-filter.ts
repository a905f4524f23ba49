import type { AuditEvent, AuditFilter } from './api.ts';

/** The audit log's filters as the form holds them (dates as a `date` input gives them). */
export interface Filters {
  actor_id: string;
  action: string;
  resource_id: string;
  outcome: '' | AuditEvent['outcome'];
  environment: '' | 'sandbox' | 'live';
  from: string;
  to: string;
}
export const NO_FILTERS: Filters = { actor_id: '', action: '', resource_id: '', outcome: '', environment: '', from: '', to: '' };

/** A `date` input's day (the browser's time zone) as the API's timestamp: its start, or with `next` the next day's start. */
export function dayBound(day: string, next = false): string | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(day);
  if (!m) return undefined;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + (next ? 1 : 0));
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function auditQuery(f: Filters): AuditFilter {
  const q: AuditFilter = {};
  if (f.actor_id.trim()) q.actor_id = f.actor_id.trim();
  if (f.action.trim()) q.action = f.action.trim();
  if (f.resource_id.trim()) q.resource_id = f.resource_id.trim();
  if (f.outcome) q.outcome = f.outcome;
  if (f.environment) q.environment = f.environment;
  const from = dayBound(f.from);
  const to = dayBound(f.to, true); // "to" is the last day shown, whole
  if (from) q['created[gte]'] = from;
  if (to) q['created[lt]'] = to;
  return q;
}
