import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Link, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import { ConfigError } from '../errors.ts';
import type { Attributes, SpanHandle, SpanKind as Kind, SpanOptions, Tracing } from './tracing.ts';

const KINDS: Record<Kind, SpanKind> = {
  internal: SpanKind.INTERNAL,
  server: SpanKind.SERVER,
  client: SpanKind.CLIENT,
  producer: SpanKind.PRODUCER,
  consumer: SpanKind.CONSUMER,
};

/**
 * The OpenTelemetry SDK behind tracing.ts, set up from the standard variables: the OTLP/HTTP
 * exporter (`OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL` http/protobuf, the default, or http/json;
 * endpoint, headers, timeout and compression are read by the exporter itself), the resource
 * (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`), the sampler (`OTEL_TRACES_SAMPLER[_ARG]`)
 * and the batch processor (`OTEL_BSP_*`). W3C trace context is the propagation format.
 */
export function createOtelTracing(env: NodeJS.ProcessEnv): Tracing {
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf').trim();
  if (protocol !== 'http/protobuf' && protocol !== 'http/json')
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol} is not supported: payhooks exports traces over OTLP/HTTP; use http/protobuf (the default) or http/json.`,
    );
  const exporters = (env.OTEL_TRACES_EXPORTER ?? 'otlp').split(',').map((e) => e.trim().toLowerCase());
  const unknown = exporters.filter((e) => e !== 'otlp' && e !== 'none' && e !== '');
  if (unknown.length)
    throw new ConfigError(
      `OTEL_TRACES_EXPORTER=${env.OTEL_TRACES_EXPORTER} is not supported: payhooks exports traces with otlp (or none).`,
    );
  const exporter = protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'payhooks' }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    sampler: samplerFrom(env),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter,
        ...positive(env, 'OTEL_BSP_SCHEDULE_DELAY', 'scheduledDelayMillis'),
        ...positive(env, 'OTEL_BSP_EXPORT_TIMEOUT', 'exportTimeoutMillis'),
        ...positive(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 'maxQueueSize'),
        ...positive(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'maxExportBatchSize'),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const tracer = provider.getTracer('payhooks');

  return {
    enabled: true,
    startSpan(name: string, options: SpanOptions = {}): SpanHandle {
      const parent = options.parent ? fromTraceparent(options.parent) : options.root ? ROOT_CONTEXT : context.active();
      const links: Link[] = [];
      for (const tp of options.links ?? []) {
        const linked = tp ? trace.getSpanContext(fromTraceparent(tp)) : undefined;
        if (linked) links.push({ context: linked });
      }
      const span = tracer.startSpan(
        name,
        {
          kind: KINDS[options.kind ?? 'internal'],
          attributes: clean(options.attributes),
          links,
          root: options.root === true,
          ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
        },
        parent,
      );
      return new OtelSpan(span);
    },
    withSpan<T>(handle: SpanHandle, fn: () => T): T {
      if (!(handle instanceof OtelSpan)) return fn();
      return context.with(trace.setSpan(context.active(), handle.span), fn);
    },
    flush: () => provider.forceFlush(),
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

class OtelSpan implements SpanHandle {
  constructor(readonly span: Span) {}

  get traceparent(): string | undefined {
    const c = this.span.spanContext();
    if (!trace.isSpanContextValid(c)) return undefined;
    return `00-${c.traceId}-${c.spanId}-${(c.traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
  }

  setAttributes(attributes: Attributes): void {
    this.span.setAttributes(clean(attributes));
  }

  end(error?: string): void {
    if (error) this.span.setStatus({ code: SpanStatusCode.ERROR, message: error });
    this.span.end();
  }
}

function fromTraceparent(traceparent: string) {
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

function clean(attributes: Attributes | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(attributes ?? {})) if (v !== undefined) out[k] = v;
  return out;
}

function positive(env: NodeJS.ProcessEnv, name: string, option: string): Record<string, number> {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return {};
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ConfigError(`${name} must be a positive number (got ${JSON.stringify(raw)}).`);
  return { [option]: n };
}

/** OTEL_TRACES_SAMPLER as the specification names them; parentbased_always_on by default. */
function samplerFrom(env: NodeJS.ProcessEnv): Sampler {
  const name = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim().toLowerCase();
  const ratio = () => {
    const raw = env.OTEL_TRACES_SAMPLER_ARG;
    const r = raw === undefined || raw.trim() === '' ? 1 : Number(raw);
    if (!Number.isFinite(r) || r < 0 || r > 1)
      throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1 (got ${JSON.stringify(raw)}).`);
    return new TraceIdRatioBasedSampler(r);
  };
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    default:
      throw new ConfigError(
        `OTEL_TRACES_SAMPLER=${name} is not supported: use always_on, always_off, traceidratio or their parentbased_ forms.`,
      );
  }
}
