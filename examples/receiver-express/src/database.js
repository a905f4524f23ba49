// The receiver's own PostgreSQL database: never the server's shared `postgres` database, so its
// tables (payhooks_events, payhooks_credits, ledger_entries) live beside nothing else.
import pg from 'pg';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/receiver_express';

/**
 * A pool on `url`'s database, created first if it does not exist yet (as `createdb` would; the
 * server's maintenance database is used for that one statement only). Any other failure
 * (server down, authentication) is thrown as is.
 */
export async function openDatabase(url = DEFAULT_DATABASE_URL, log = console.log) {
  const pool = new pg.Pool({ connectionString: url });
  // An idle connection the server drops (a restart, a failover) is replaced on the next query;
  // without this listener node-postgres would crash the process with it.
  pool.on('error', (error) => console.error(`[receiver] idle database connection lost: ${error.message}`));
  try {
    await pool.query('SELECT 1');
    return pool;
  } catch (error) {
    if (error.code !== '3D000') {
      await pool.end();
      throw error;
    }
  }
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  const maintenance = new URL(url);
  maintenance.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: maintenance.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    log(`created database ${name}`);
  } catch (error) {
    if (error.code !== '42P04') throw error; // another process created it first
  } finally {
    await admin.end();
  }
  return pool;
}
