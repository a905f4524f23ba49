import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { wantsTracing } from '../../src/telemetry/tracing.ts';
import { createOtelTracing } from '../../src/telemetry/otel.ts';
import { ConfigError } from '../../src/errors.ts';

/** Issue 25 item 4: tracing is configured by OTEL_* alone, and without them the SDK is never loaded. */
describe('wantsTracing', () => {
  it('is off with no OTEL_* variable, on with any, off again when disabled or exporting none', () => {
    expect(wantsTracing({})).toBe(false);
    expect(wantsTracing({ PAYHOOKS_PORT: '8080', NODE_ENV: 'production' })).toBe(false);
    expect(wantsTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(wantsTracing({ OTEL_SERVICE_NAME: 'payhooks-eu' })).toBe(true);
    expect(wantsTracing({ OTEL_SERVICE_NAME: 'x', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(wantsTracing({ OTEL_SERVICE_NAME: 'x', OTEL_SDK_DISABLED: 'false' })).toBe(true);
    expect(wantsTracing({ OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(wantsTracing({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
  });
});

describe('OTEL_* settings payhooks cannot honour stop the start with a message naming the fix', () => {
  it.each([
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported.*http\/protobuf.*http\/json/],
    [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' }, /grpc is not supported/],
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER=zipkin is not supported/],
    [{ OTEL_TRACES_SAMPLER: 'sometimes' }, /OTEL_TRACES_SAMPLER=sometimes is not supported/],
    [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, /ratio from 0 to 1/],
    [{ OTEL_BSP_SCHEDULE_DELAY: 'soon' }, /OTEL_BSP_SCHEDULE_DELAY must be a positive number/],
  ])('%j', (env, message) => {
    expect(() => createOtelTracing(env)).toThrow(ConfigError);
    expect(() => createOtelTracing(env)).toThrow(message);
  });
});

describe('the SDK is loaded only through telemetry/otel.ts, and that only by a dynamic import', () => {
  const src = fileURLToPath(new URL('../../src', import.meta.url));
  const files = (dir: string): string[] =>
    readdirSync(dir).flatMap((f) => (statSync(join(dir, f)).isDirectory() ? files(join(dir, f)) : f.endsWith('.ts') ? [join(dir, f)] : []));

  it('no other module imports @opentelemetry/* or otel.ts statically', () => {
    const offenders = files(src)
      .filter((f) => !f.endsWith(join('telemetry', 'otel.ts')))
      .filter((f) => /^\s*import\s[^;]*from\s+'(@opentelemetry\/[^']+|[^']*\/otel\.ts)'/m.test(readFileSync(f, 'utf8')))
      .map((f) => relative(src, f));
    expect(offenders).toEqual([]);
    expect(readFileSync(join(src, 'telemetry', 'tracing.ts'), 'utf8')).toMatch(/await import\('\.\/otel\.ts'\)/);
  });
});
