import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SETTINGS, settingsTable } from '../../src/config.ts';

describe('README configuration table', () => {
  it('lists every setting of the config schema, with its default', () => {
    const readme = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
    for (const row of settingsTable().split('\n')) expect(readme, `README is missing: ${row}`).toContain(row);
    expect(SETTINGS.length).toBeGreaterThan(10);
  });
});
