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
});
