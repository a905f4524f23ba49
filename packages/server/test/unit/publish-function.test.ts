import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { publishFunctionSql } from '../../src/events/publish-function.ts';
import { PUBLISH, REPLAYED } from '../../src/events/publish-statements.ts';
import { substitute } from '../../src/db/statement.ts';

const FILE = new URL('../../src/db/migrations/R_publish_event.sql', import.meta.url);

describe('payhooks.publish_event is generated from the TypeScript path (events/publish-function.ts)', () => {
  it('the committed R_publish_event.sql is what the generator makes (npm run generate rewrites it)', () => {
    expect(readFileSync(FILE, 'utf8')).toBe(publishFunctionSql());
  });

  it("runs the publish statement's and the replay lookup's own text: the key window and the fan-out are written once", () => {
    const text = publishFunctionSql();
    // Every line of the statements, parameters aside, is in the function.
    const lines = (source: string) =>
      source
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !/:[a-z]/.test(l.replace(/::/g, '')));
    for (const line of [...lines(PUBLISH.one.source), ...lines(REPLAYED.source)]) expect(text).toContain(line);
    expect(() => substitute(PUBLISH.one, {})).toThrow(/no SQL for/);
  });
});
