import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnPayhooks } from '../helpers/spawn.ts';

describe('payhooks worker', () => {
  it('refuses the embedded database and says why, exiting non-zero', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-worker-'));
    try {
      const w = spawnPayhooks(['worker'], { PAYHOOKS_DATA_DIR: dir });
      expect(await w.exited).toBe(1);
      expect(w.output()).toContain('payhooks worker needs PostgreSQL: set DATABASE_URL');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('serve --no-worker on the embedded database is refused: nothing could ever deliver its events', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-worker-'));
    try {
      const s = spawnPayhooks(['serve', '--no-worker'], { PAYHOOKS_DATA_DIR: dir, PAYHOOKS_PORT: '0' });
      expect(await s.exited).toBe(1);
      expect(s.output()).toContain('payhooks: serve --no-worker needs PostgreSQL');
      expect(s.output()).toContain('Drop --no-worker, or set DATABASE_URL and run `payhooks worker` beside it.');
      expect(s.output(), 'no stack trace').not.toMatch(/\n\s+at /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a lease too short for the attempt deadline stops the worker at start, saying what to set', async () => {
    const w = spawnPayhooks(['worker'], { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', PAYHOOKS_LEASE: '5s' });
    expect(await w.exited).toBe(1);
    expect(w.output()).toContain('payhooks: PAYHOOKS_LEASE=5s is too short for PAYHOOKS_ATTEMPT_TIMEOUT=10s');
    expect(w.output()).toContain('Set PAYHOOKS_LEASE above 21s');
  });
});
