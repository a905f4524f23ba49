import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, createMigratedPgDatabase } from '../helpers/database.ts';
import { killAllPayhooks, runPayhooks } from '../helpers/cli.ts';

/**
 * `payhooks admin list-platforms` and `admin list-keys` as real processes on this run's backend:
 * they show what create-platform / create-key / revoke-key did, keys by id and prefix only.
 */

const SPAWN_TIMEOUT = 90_000;
const RUN_TIMEOUT = 80_000;

let dbEnv: Record<string, string>;
let cleanup = async () => {};

beforeAll(async () => {
  if (backend === 'postgres') {
    const db = await createMigratedPgDatabase();
    cleanup = db.drop;
    dbEnv = { DATABASE_URL: db.url, PAYHOOKS_ENCRYPTION_KEY: randomBytes(32).toString('hex') };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-admin-list-'));
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
    dbEnv = { PAYHOOKS_DATA_DIR: dir };
  }
});

afterAll(async () => {
  await killAllPayhooks();
  await cleanup();
});

async function ok(args: string[], timeoutMs = RUN_TIMEOUT): Promise<string> {
  const r = await runPayhooks(args, dbEnv, timeoutMs);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

describe(`payhooks admin list-platforms / list-keys on ${backend}`, () => {
  it(
    'an empty database lists nothing, and says how to create a Platform',
    async () => {
      // On PGlite the first command creates and migrates the data directory: the slowest spawn.
      expect(await ok(['admin', 'list-platforms'], 3 * RUN_TIMEOUT)).toContain('payhooks admin create-platform');
      expect(JSON.parse(await ok(['admin', 'list-keys', '--json']))).toEqual([]);
    },
    SPAWN_TIMEOUT * 4,
  );

  it(
    'lists each Platform with its unrevoked keys, and each key by id and prefix, never the key',
    async () => {
      const acme = JSON.parse(await ok(['admin', 'create-platform', '--name', 'Acme Payments', '--json']));
      const globex = JSON.parse(await ok(['admin', 'create-platform', '--name', 'Globex', '--json']));
      const extra = JSON.parse(await ok(['admin', 'create-key', '--platform', acme.platform_id, '--environment', 'live', '--json']));
      await ok(['admin', 'revoke-key', acme.keys.live.slice(0, 12)]);

      const platforms = JSON.parse(await ok(['admin', 'list-platforms', '--json']));
      expect(Array.isArray(platforms)).toBe(true);
      expect(platforms).toEqual([
        { id: acme.platform_id, name: 'Acme Payments', created_at: expect.any(String), active_keys: { live: 1, sandbox: 1 } },
        { id: globex.platform_id, name: 'Globex', created_at: expect.any(String), active_keys: { live: 1, sandbox: 1 } },
      ]);
      const text = await ok(['admin', 'list-platforms']);
      expect(text).toContain(acme.platform_id);
      expect(text).toContain('Acme Payments');

      const all = await ok(['admin', 'list-keys', '--json']);
      const keys = JSON.parse(all) as Array<{
        id: string;
        platform_id: string;
        environment: string;
        prefix: string;
        revoked_at: string | null;
      }>;
      expect(keys).toHaveLength(5);
      // Secrets are never printed: no full key of either Platform appears anywhere in the output.
      for (const secret of [acme.keys.live, acme.keys.sandbox, globex.keys.live, globex.keys.sandbox, extra.key])
        expect(all).not.toContain(secret);
      const ofAcme = JSON.parse(await ok(['admin', 'list-keys', '--platform', acme.platform_id, '--json'])) as typeof keys;
      expect(ofAcme.map((k) => k.platform_id)).toEqual([acme.platform_id, acme.platform_id, acme.platform_id]);
      const revoked = ofAcme.find((k) => k.prefix === acme.keys.live.slice(0, 12))!;
      expect(revoked).toEqual({
        id: expect.stringMatching(/^key_/),
        platform_id: acme.platform_id,
        environment: 'live',
        prefix: acme.keys.live.slice(0, 12),
        created_at: expect.any(String),
        revoked_at: expect.any(String),
      });
      expect(ofAcme.find((k) => k.id === extra.id)).toMatchObject({
        environment: 'live',
        prefix: extra.key.slice(0, 12),
        revoked_at: null,
      });
      expect(ofAcme.find((k) => k.environment === 'sandbox')).toMatchObject({ prefix: acme.keys.sandbox.slice(0, 12), revoked_at: null });

      const table = await ok(['admin', 'list-keys', '--platform', globex.platform_id]);
      expect(table.trim().split('\n')).toHaveLength(2);
      expect(table).toContain(globex.keys.live.slice(0, 12));
      expect(table).not.toContain(globex.keys.live);
      expect(table).not.toContain(acme.platform_id);
    },
    SPAWN_TIMEOUT * 4,
  );

  it(
    'list-keys for an unknown Platform exits 1 with a one-line reason',
    async () => {
      const r = await runPayhooks(['admin', 'list-keys', '--platform', 'plt_nope'], dbEnv, RUN_TIMEOUT);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^payhooks: No such Platform: plt_nope/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
    SPAWN_TIMEOUT,
  );
});
