import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import type { Scope } from '../../scope.ts';
import { FAILURE_KINDS } from '../../delivery/attempt-stats.ts';
import { endpointSeries, platformSeries, statsRange } from '../../delivery/stats.ts';
import { Timestamp, createdBound, errorResponses } from './schemas.ts';
import { StringEnum } from './event-schemas.ts';
import { EndpointIdParams, endpointId } from './webhook-endpoints.ts';

const TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$';

export const StatsQuery = Type.Object(
  {
    from: Type.Optional(
      Type.String({
        pattern: TIME,
        description: 'Start (YYYY-MM-DDThh:mm:ssZ, rounded down to its bucket). Default: 24 hours (hour) or 30 days (day) before until.',
      }),
    ),
    until: Type.Optional(
      Type.String({
        pattern: TIME,
        description: 'End, exclusive (rounded up to a bucket boundary). Default: the end of the current hour or day.',
      }),
    ),
    granularity: Type.Optional(
      StringEnum(['hour', 'day'] as const, {
        description:
          'hour (kept 8 days, at most 7 per request) or day (kept for the retention window, at most 400 per request). Default hour.',
      }),
    ),
  },
  { additionalProperties: false },
);

const Counts = {
  attempts: Type.Integer({
    description: 'Attempts made, automatic and manual (an interrupted attempt, whose outcome is unknown, is not counted).',
  }),
  successes: Type.Integer({ description: 'Attempts answered 2xx (or confirmed by the broker).' }),
  failures: Type.Object(
    Object.fromEntries(FAILURE_KINDS.map((k) => [k, Type.Integer()])) as Record<
      (typeof FAILURE_KINDS)[number],
      ReturnType<typeof Type.Integer>
    >,
    {
      description:
        'Failed attempts by kind: timeout; connection (refused, reset, DNS, a forbidden address); tls; http_4xx (but 429); http_429; http_5xx; endpoint_disabled (no request: the endpoint was disabled); other (3xx, a broker refusal, anything else).',
    },
  ),
  latency_ms: Type.Object(
    {
      p50: Type.Union([Type.Integer(), Type.Null()]),
      p95: Type.Union([Type.Integer(), Type.Null()]),
      p99: Type.Union([Type.Integer(), Type.Null()]),
    },
    {
      description:
        'Answer time percentiles in milliseconds, of the attempts that got an answer (within 9 %: they are read from a histogram); null when none did.',
    },
  ),
};

export const StatsSchema = Type.Object(
  {
    object: Type.Literal('webhook_stats'),
    endpoint_id: Type.Union([Type.String(), Type.Null()], { description: "The endpoint; null for the Platform's summary." }),
    environment: StringEnum(['live', 'sandbox'] as const),
    granularity: StringEnum(['hour', 'day'] as const),
    from: Timestamp,
    until: Timestamp,
    totals: Type.Object(Counts, { description: 'The whole range.' }),
    data: Type.Array(Type.Object({ start: Timestamp, ...Counts }), {
      description: 'Every bucket of the range, oldest first (UTC hours or days), zeros where nothing was attempted.',
    }),
    endpoints: Type.Optional(
      Type.Array(Type.Object({ endpoint_id: Type.String(), ...Counts }), {
        description:
          "Platform summary only: each endpoint's totals over the range, most attempts first (endpoints without attempts are left out).",
      }),
    ),
  },
  {
    $id: 'WebhookStats',
    description:
      'Delivery health over time: attempts, successes, failures by kind and answer times, per hour or per day. Counted as attempts are recorded; reading costs the buckets, not the history.',
  },
);

type Query = Static<typeof StatsQuery>;

/** The range a query asks for, at the service's clock. */
export function rangeOf(q: Query, now: Date) {
  return statsRange({ granularity: q.granularity, from: createdBound(q.from, 'from'), until: createdBound(q.until, 'until') }, now);
}

/** One endpoint's stats (404 unless it is the scope's), or the Platform's summary: what the API and the portal answer. */
export async function statsFor(ctx: ServiceContext, scope: Scope, id: string | null, q: Query) {
  const range = rangeOf(q, ctx.clock.now());
  const head = { object: 'webhook_stats' as const, environment: scope.environment };
  if (id === null) return { ...head, endpoint_id: null, ...(await platformSeries(ctx.database, scope, range)) };
  await ctx.endpoints.getRow(scope, id);
  return { ...head, endpoint_id: id, ...(await endpointSeries(ctx.database, scope, id, range)) };
}

/** `/api/v1/webhook_endpoints/{id}/stats` and `/api/v1/webhook_stats`: health over time. */
export const webhookStatsRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    const base = { tags: ['webhook_endpoints'], security: [{ bearerAuth: [] }], querystring: StatsQuery };
    app.get(
      '/webhook_endpoints/:id/stats',
      {
        schema: {
          ...base,
          operationId: 'retrieveWebhookEndpointStats',
          summary: "An endpoint's attempts, successes, failures by kind and answer times, per hour or per day",
          params: EndpointIdParams,
          response: { 200: Type.Ref(StatsSchema, { description: "The endpoint's stats over the range." }), ...errorResponses(400, 404) },
        },
      },
      async (req) => statsFor(ctx, req.scope, endpointId(req.params.id), req.query),
    );
    app.get(
      '/webhook_stats',
      {
        schema: {
          ...base,
          operationId: 'retrieveWebhookStats',
          summary: "The Platform's summary in this environment: every endpoint together, and each endpoint's totals",
          response: { 200: Type.Ref(StatsSchema, { description: "The Platform's stats over the range." }), ...errorResponses(400) },
        },
      },
      async (req) => statsFor(ctx, req.scope, null, req.query),
    );
  };
