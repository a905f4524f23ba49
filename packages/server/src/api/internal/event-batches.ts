import type { EventType } from '@payhooks/contract';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ServiceContext } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { PUBLISH_BATCH_MAX, publishEventsAlone, type BatchEventInput, type BatchOutcome } from '../../events/publish.ts';
import { validateEndpointFamilyObject, refuseOperatorMerchant } from '../../endpoints/event-objects.ts';
import { validatePaymentFamilyObject } from '../../payments/event-objects.ts';
import { ErrorSchema } from '../v1/schemas.ts';
import { EventSchema } from '../v1/event-schemas.ts';
import { asStored } from '../v1/events.ts';
import { PublishBody } from './events.ts';

/**
 * The whole batch; a hundred events of a few kilobytes each fit many times over. Each event is
 * held to EVENT_MAX_BYTES on its own (events/envelope.ts), as any other way of publishing it.
 */
const BATCH_BODY_LIMIT = 2 * 1024 * 1024;

const BatchItem = Type.Object(
  {
    ...PublishBody.properties,
    idempotency_key: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Required in a batch, so that sending the batch again after a lost answer publishes nothing twice.',
    }),
  },
  { additionalProperties: false },
);

const BatchBody = Type.Object(
  { events: Type.Array(BatchItem, { minItems: 1, maxItems: PUBLISH_BATCH_MAX }) },
  { additionalProperties: false },
);

const BatchResult = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(
      Type.Union([
        Type.Object(
          {
            status: Type.Literal(201),
            idempotent_replayed: Type.Boolean({ description: 'True when the idempotency_key was used before: `event` is the first one.' }),
            event: Type.Ref(EventSchema),
          },
          { description: 'Published (or published before with this idempotency_key).' },
        ),
        Type.Object(
          {
            status: Type.Integer({
              description:
                'The status this event alone would have been answered with (400: its data.object or merchant_id; 413: over 256 KiB once serialised).',
            }),
            error: Type.Index(ErrorSchema, ['error']),
          },
          { description: 'Refused; nothing of this event was written.' },
        ),
      ]),
      { description: 'One result per event, in the order sent.' },
    ),
  },
  { description: 'Every event of the batch, each with its own outcome.' },
);

function itemResult(o: BatchOutcome) {
  if (o.ok) return { status: 201 as const, idempotent_replayed: o.result.replayed, event: o.result.event };
  return { status: o.error.status, ...o.error.toBody() };
}

/**
 * `POST /internal/v1/events/batch`: up to 100 events in one request and one transaction, for a
 * payment core that publishes in bulk. A malformed request (its JSON shape, an unknown type) is
 * refused whole with a 400 naming the event (`events[3].type`); beyond the shape each event
 * stands alone: one whose data.object does not fit its type, or whose merchant is unknown, gets
 * its own error in `data` and the others are published. A database failure publishes none (503).
 */
export const internalEventBatchRoutes =
  (ctx: ServiceContext): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/events/batch',
      {
        config: { audit: { exempt: "the payment core's event stream, as POST /internal/v1/events: every event is its own record" } },
        bodyLimit: BATCH_BODY_LIMIT,
        serializerCompiler: asStored,
        schema: {
          tags: ['internal'],
          security: [{ internalToken: [] }],
          operationId: 'publishEventBatch',
          summary: 'Publish up to 100 events in one transaction, each with its own result',
          description:
            'Each event is what POST /internal/v1/events takes, with `idempotency_key` required. A malformed batch (its JSON shape, an unknown type) is refused whole with a 400 naming the event, e.g. `events[3][type]`. Otherwise every event has its own result in `data`, in order: 201 with the event (`idempotent_replayed` when its key was used before, or earlier in the batch), or the error that event alone would get (its `data.object` for its type, an unknown `merchant_id`, 413 `body_too_large` for an event over 256 KiB once serialised, naming it as `events[i]`); the published events commit together. A database failure publishes none (503).',
          body: BatchBody,
          response: { 200: BatchResult },
        },
      },
      async (req) => {
        const events = (req.body as Static<typeof BatchBody>).events;
        const refused = new Map<number, AppError>();
        const inputs: { index: number; input: BatchEventInput }[] = [];
        events.forEach((b, index) => {
          try {
            validatePaymentFamilyObject(b.type as EventType, b.data.object);
            validateEndpointFamilyObject(b.type as EventType, b.data.object);
            refuseOperatorMerchant(b.merchant_id, `events[${index}][merchant_id]`);
          } catch (err) {
            if (!(err instanceof AppError)) throw err;
            refused.set(index, err);
            return;
          }
          inputs.push({
            index,
            input: {
              type: b.type,
              merchantId: b.merchant_id,
              environment: b.environment,
              object: b.data.object,
              idempotencyKey: b.idempotency_key,
              label: `events[${index}]`,
            },
          });
        });
        // One statement: its events commit together or not at all.
        const published =
          inputs.length === 0
            ? []
            : await publishEventsAlone(
                ctx.database,
                inputs.map((i) => i.input),
                ctx.clock.now(),
              );
        const outcomes: BatchOutcome[] = events.map((_, index) => ({ ok: false, error: refused.get(index)! }));
        for (const [k, i] of inputs.entries()) outcomes[i.index] = published[k]!;
        return { object: 'list' as const, data: outcomes.map(itemResult) };
      },
    );
  };
