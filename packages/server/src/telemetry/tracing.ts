/**
 * Tracing (issue 25 item 4), configured only by the standard OTEL_* environment variables.
 *
 * This module is the whole of what the rest of payhooks sees: a small facade with a no-op
 * default. The OpenTelemetry SDK lives in otel.ts, imported only when some OTEL_* variable is
 * set, so a deployment without them never loads it, and each instrumented place pays one
 * property read (`tracing.enabled`) per operation.
 */

export type SpanKind = 'internal' | 'server' | 'client' | 'producer' | 'consumer';
export type Attributes = Record<string, string | number | boolean | undefined>;

export interface SpanHandle {
  /** The W3C `traceparent` of this span, to carry to the receiver or store with an event. */
  readonly traceparent: string | undefined;
  setAttributes(attributes: Attributes): void;
  /** Ends the span; `error` marks it failed with that description. */
  end(error?: string): void;
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Spans this one follows from (their `traceparent`s): the publish an attempt delivers. */
  links?: ReadonlyArray<string | null | undefined>;
  /** A new trace (a worker's claim or attempt), not a child of whatever runs now. */
  root?: boolean;
  /** The parent, from an incoming `traceparent` header (an API request). */
  parent?: string | undefined;
  /** When the work began (epoch milliseconds), for a span started after the fact. */
  startTime?: number;
}

export interface Tracing {
  readonly enabled: boolean;
  startSpan(name: string, options?: SpanOptions): SpanHandle;
  /** Runs `fn` with `span` as the current span, so spans started inside are its children. */
  withSpan<T>(span: SpanHandle, fn: () => T): T;
  /** Exports what is buffered (tests, and before exit). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const NOOP_SPAN: SpanHandle = { traceparent: undefined, setAttributes: () => {}, end: () => {} };

const NOOP: Tracing = {
  enabled: false,
  startSpan: () => NOOP_SPAN,
  withSpan: (_span, fn) => fn(),
  flush: async () => {},
  shutdown: async () => {},
};

/** The process's tracing: the no-op until `startTracing` found OTEL_* settings. */
export let tracing: Tracing = NOOP;

/**
 * Whether the environment asks for traces: any OTEL_* variable set, unless the SDK is disabled
 * (`OTEL_SDK_DISABLED=true`) or the traces exporter is `none`.
 */
export function wantsTracing(env: NodeJS.ProcessEnv): boolean {
  if (!Object.keys(env).some((k) => k.startsWith('OTEL_'))) return false;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? 'otlp')
    .split(',')
    .map((e) => e.trim().toLowerCase())
    .filter(Boolean);
  return !(exporters.length === 1 && exporters[0] === 'none');
}

/**
 * Runs `fn` inside a span named `name` (only while tracing: otherwise `fn` alone, with no
 * traceparent). `after` adds attributes from the result; a throw ends the span as an error.
 * The span is not made current: spans `fn` starts are not its children (publish, claim, record).
 */
export async function traced<T>(
  name: string,
  options: SpanOptions,
  fn: (traceparent: string | undefined) => Promise<T>,
  after?: (result: T) => Attributes,
  /**
   * Export the span only when the result says work was done: a worker woken for nothing makes
   * an empty claim every poll, which is noise in a trace store. The span is then made after the
   * fact, with the start time taken before `fn`, so `fn` gets no traceparent.
   */
  keepIf?: (result: T) => boolean,
): Promise<T> {
  if (!tracing.enabled) return fn(undefined);
  if (keepIf) {
    const startTime = performance.timeOrigin + performance.now();
    let result: T;
    try {
      result = await fn(undefined);
    } catch (err) {
      tracing.startSpan(name, { ...options, startTime }).end((err as Error).message);
      throw err;
    }
    if (keepIf(result)) {
      const span = tracing.startSpan(name, { ...options, startTime });
      if (after) span.setAttributes(after(result));
      span.end();
    }
    return result;
  }
  const span = tracing.startSpan(name, options);
  let result: T;
  try {
    result = await fn(span.traceparent);
  } catch (err) {
    span.end((err as Error).message);
    throw err;
  }
  if (after) span.setAttributes(after(result));
  span.end();
  return result;
}

/** Starts tracing when the environment asks for it (once per process); returns what is in use. */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<Tracing> {
  if (tracing.enabled || !wantsTracing(env)) return tracing;
  const { createOtelTracing } = await import('./otel.ts');
  tracing = createOtelTracing(env);
  return tracing;
}

/** Stops tracing (flushing what is buffered) and goes back to the no-op. */
export async function stopTracing(): Promise<void> {
  const current = tracing;
  tracing = NOOP;
  await current.shutdown();
}
