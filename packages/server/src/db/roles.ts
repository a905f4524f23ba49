import { randomBytes } from 'node:crypto';
import { runAlone, statement } from './statement.ts';
import type { Database } from './client.ts';

/**
 * Who the service connects to PostgreSQL as, and the runtime role: a role with only the grants
 * `serve` and `worker` need, so the audit trail's append-only triggers bind it
 * (docs/decisions/runtime-database-role.md).
 *
 * The triggers (migration 0022) refuse UPDATE, DELETE and TRUNCATE of audit entries, but a table's
 * owner can disable them, drop them, detach or drop a partition or rewrite a column, and a
 * superuser can do all that and more (`session_replication_role = replica` skips them). So the
 * promise holds only for a role that is neither: the runtime role. `migrate` and the hourly
 * partition maintenance (`payhooks maintain`) create and drop tables, so they run as the owner.
 */

/** The connection's role: the audit trail's owner (or a member of its role), or a superuser. */
export interface ConnectionRole {
  user: string;
  superuser: boolean;
  /** May act as the owner of `audit_events` (is it, or a member of its role; superusers too). */
  owner: boolean;
}

const ROLE = statement<Record<string, never>, { user: string; superuser: boolean; owner: boolean }>(
  'connection_role',
  `SELECT current_user AS user, r.rolsuper AS superuser, pg_has_role(current_user, c.relowner, 'MEMBER') AS owner
   FROM pg_roles r, pg_class c WHERE r.rolname = current_user AND c.oid = 'audit_events'::regclass`,
);

/** PostgreSQL only: PGlite has one user, itself the owner. */
export async function connectionRole(database: Database): Promise<ConnectionRole | null> {
  if (database.kind !== 'postgres') return null;
  const [row] = await runAlone(database, ROLE, {});
  if (!row) return null;
  return { user: row.user, superuser: row.superuser, owner: row.owner };
}

/** The one line `serve` and `worker` log at start when the audit trail does not bind them; null when it does. */
export function auditTrailWarning(role: ConnectionRole | null): string | null {
  if (!role || !(role.superuser || role.owner)) return null;
  const who = role.superuser ? 'a superuser' : "the audit trail's owner";
  return (
    `connected to PostgreSQL as ${role.user}, ${who}: this role can switch off the audit trail's append-only triggers, so its entries can be changed or deleted. ` +
    'Run serve and worker as a runtime role with only the grants they need (`payhooks admin runtime-role NAME` creates or checks one), and migrate and maintain as the owner.'
  );
}

/** A role name we create: lower-case SQL identifier, no quoting needed. */
const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export function checkRoleName(name: string): string | null {
  if (!ROLE_NAME.test(name)) return 'a role name is 1 to 63 lower-case letters, digits and underscores, not starting with a digit';
  if (name.startsWith('pg_')) return 'names starting with pg_ are reserved by PostgreSQL';
  return null;
}

/** Tables the runtime role only reads (the migrations' ledgers) or only appends to and reads (the audit trail). */
const READ_ONLY = ['payhooks_migrations', 'payhooks_repeatable'];
const APPEND_ONLY = ['audit_events'];

/**
 * Creates the runtime role (LOGIN, with a generated password, returned once) unless it exists,
 * and grants it what `serve` and `worker` use: the schemas, reading and writing every table but
 * the two above, the sequences and the functions; on PostgreSQL 17 and later also MAINTAIN on
 * the delivery queue, so the worker's frequent VACUUM of it goes on. Idempotent: run it again
 * after each `migrate` (a new table gets its grants). Run as the owner of the tables.
 */
export async function grantRuntimeRole(database: Database, name: string): Promise<{ created: boolean; password: string | null }> {
  const problem = checkRoleName(name);
  if (problem) throw new Error(problem);
  return database.script(async (run) => {
    const [exists] = await run(`SELECT 1 FROM pg_roles WHERE rolname = '${name}'`);
    let password: string | null = null;
    if (!exists) {
      password = randomBytes(24).toString('base64url');
      await run(`CREATE ROLE ${name} LOGIN PASSWORD '${password}' NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS`);
    }
    await run(`GRANT USAGE ON SCHEMA public, payhooks TO ${name}`);
    await run(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${name}`);
    await run(`GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO ${name}`);
    await run(`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA payhooks TO ${name}`);
    // Every partition of the two, present (the GRANT above reached them) and each table itself.
    for (const table of [...READ_ONLY, ...APPEND_ONLY]) {
      const keep = READ_ONLY.includes(table) ? 'INSERT, UPDATE, DELETE' : 'UPDATE, DELETE';
      for (const rel of await tableAndPartitions(run, table))
        await run(`REVOKE ${keep}, TRUNCATE, REFERENCES, TRIGGER ON ${rel} FROM ${name}`);
    }
    const [version] = await run(`SELECT current_setting('server_version_num')::int AS v`);
    if (Number(version?.v) >= 170000) await run(`GRANT MAINTAIN ON delivery_queue TO ${name}`);
    return { created: !exists, password };
  });
}

async function tableAndPartitions(run: (sql: string) => Promise<Record<string, unknown>[]>, table: string): Promise<string[]> {
  const rows = await run(
    `SELECT c.relname FROM pg_class c WHERE c.oid = '${table}'::regclass
     UNION ALL
     SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '${table}'::regclass`,
  );
  return rows.map((r) => String(r.relname));
}

/**
 * What is wrong with `name` as the runtime role, each as one sentence; empty when it is right:
 * it exists and can log in, is no superuser, owns nothing of ours and can't act as the owner,
 * may append to and read the audit trail but not change it, and has the grants it needs on every
 * other table.
 */
export async function checkRuntimeRole(database: Database, name: string): Promise<string[]> {
  const problem = checkRoleName(name);
  if (problem) return [problem];
  return database.script(async (run) => {
    const [role] = await run(
      `SELECT r.rolsuper AS superuser, r.rolcanlogin AS login, r.rolbypassrls AS bypassrls, r.rolcreaterole AS createrole,
              pg_has_role('${name}', c.relowner, 'MEMBER') AS owner
       FROM pg_roles r, pg_class c WHERE r.rolname = '${name}' AND c.oid = 'audit_events'::regclass`,
    );
    if (!role) return [`there is no role ${name}: create it with payhooks admin runtime-role ${name}`];
    const problems: string[] = [];
    if (role.superuser === true) problems.push(`${name} is a superuser: it can switch the audit trail's triggers off`);
    if (role.owner === true)
      problems.push(`${name} owns the audit trail (or is a member of its owner's role): it can disable, drop or detach it`);
    if (role.createrole === true) problems.push(`${name} can create roles: it could grant itself more`);
    if (role.bypassrls === true) problems.push(`${name} bypasses row security`);
    if (role.login !== true) problems.push(`${name} can't log in`);
    const tables = await run(
      `SELECT c.relname,
              has_table_privilege('${name}', c.oid, 'SELECT') AS s, has_table_privilege('${name}', c.oid, 'INSERT') AS i,
              has_table_privilege('${name}', c.oid, 'UPDATE') AS u, has_table_privilege('${name}', c.oid, 'DELETE') AS d,
              has_table_privilege('${name}', c.oid, 'TRUNCATE') AS t, has_table_privilege('${name}', c.oid, 'TRIGGER') AS tr
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
       ORDER BY c.relname`,
    );
    for (const t of tables) {
      const rel = String(t.relname);
      const has = (k: string) => t[k] === true;
      if (APPEND_ONLY.includes(rel)) {
        if (has('u') || has('d') || has('t') || has('tr'))
          problems.push(`${name} may change or delete rows of ${rel} (grant only INSERT and SELECT)`);
        if (!has('s') || !has('i')) problems.push(`${name} can't append to or read ${rel}`);
      } else if (READ_ONLY.includes(rel)) {
        if (!has('s')) problems.push(`${name} can't read ${rel}`);
      } else if (!(has('s') && has('i') && has('u') && has('d'))) {
        problems.push(
          `${name} lacks SELECT, INSERT, UPDATE or DELETE on ${rel} (run payhooks admin runtime-role ${name} again after migrate)`,
        );
      }
    }
    return problems;
  });
}
