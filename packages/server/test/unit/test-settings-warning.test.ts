import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { warnAboutTestSettings } from '../../src/store.ts';

function capture() {
  const lines: string[] = [];
  const logger = pino(
    { level: 'warn' },
    new Writable({
      write: (chunk, _enc, cb) => {
        lines.push(String(chunk));
        cb();
      },
    }),
  );
  return { logger, lines };
}

describe('settings meant for tests and sandboxes', () => {
  it('spec 8: the contract schedule and deadline start quietly', () => {
    const { logger, lines } = capture();
    warnAboutTestSettings(loadConfig({}), logger);
    expect(lines).toEqual([]);
  });

  it('spec 8: a different retry schedule or deadline is announced with a warning at start', () => {
    for (const env of [{ PAYHOOKS_RETRY_SCHEDULE: '1s,1s,2s' }, { PAYHOOKS_ATTEMPT_TIMEOUT: '2s' }]) {
      const { logger, lines } = capture();
      warnAboutTestSettings(loadConfig(env), logger);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('tests and sandboxes only');
    }
  });
});
