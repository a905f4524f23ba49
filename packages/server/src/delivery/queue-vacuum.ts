import type { Database } from '../db/client.ts';

/**
 * How often a busy worker vacuums `delivery_queue`, at most.
 *
 * Every finished delivery deletes its queue row, so at a steady rate the queue's index fills with
 * dead entries that each claim's skip scan steps over until a VACUUM removes them. Autovacuum
 * visits a table at most once a minute (`autovacuum_naptime`), by which time a queue that takes
 * 1,000+ deliveries a second holds tens of thousands of dead rows and every claim pays for them:
 * in the reference benchmark, PostgreSQL's CPU per delivery at half load fell from 0.55 to 0.17
 * ms and latency p95 from about 1.1 s to about 0.1 s once the queue was vacuumed every second or
 * two (bench/README.md, history). The table holds only the work still to do, so vacuuming it
 * costs milliseconds.
 */
export const QUEUE_VACUUM_INTERVAL_MS = 2_000;

/**
 * `SKIP_LOCKED`: when another worker process is vacuuming the queue right now, that is enough;
 * this one neither waits nor queues behind it. `TRUNCATE false`: giving the empty pages at the
 * end back would take an ACCESS EXCLUSIVE lock that stalls every claim, record and publish
 * (migration 0008 turns it off for autovacuum too). Unnamed (simple protocol): VACUUM can't run in
 * a transaction block, and a prepared utility statement gains nothing.
 */
export async function vacuumQueue(database: Database): Promise<void> {
  await database.query('VACUUM (SKIP_LOCKED, TRUNCATE false) delivery_queue', []);
}
