import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS, settingsTable } from '../../src/config.ts';

describe('docs/operations.md configuration table', () => {
  it('lists every setting of the config schema, with its default', () => {
    const operations = readFileSync(new URL('../../../../docs/operations.md', import.meta.url), 'utf8');
    for (const row of settingsTable().split('\n')) expect(operations, `docs/operations.md is missing: ${row}`).toContain(row);
    expect(SETTINGS.length).toBeGreaterThan(10);
  });
});
