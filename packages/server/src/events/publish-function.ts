import { WILDCARD_EVENT_TYPE } from '@payhooks/contract';
import { substitute } from '../db/statement.ts';
import { buildEnvelope } from './envelope.ts';
import { WAKE_CHANNEL } from '../delivery/wake-channel.ts';
import { PUBLISH, PUBLISH_PLAIN, REPLAYED, type PublishParams } from './publish-statements.ts';

/**
 * The session setting that keeps the last fan-out the function wrote (the TypeScript path keeps
 * one per merchant in the process: events/publish.ts), so it generates that many delivery ids
 * and runs its statement once; ids are dear in PL/pgSQL (about 17 µs each), so at most
 * FANOUT_HINT_MAX are made ahead.
 */
const FANOUT_SETTING = 'payhooks.publish_fanout';
const FANOUT_HINT_MAX = 16;

/**
 * The text of db/migrations/R_publish_event.sql: `payhooks.publish_event`, the SQL outbox for
 * payment cores in any language, generated from what the TypeScript path runs, so the two can't
 * drift. What is generated:
 *
 * - the writes (the key window, the fan-out, the event, its deliveries and queue rows):
 *   `PUBLISH_PLAIN.one` or, with an idempotency key, `PUBLISH.one` of
 *   events/publish-statements.ts, their parameters replaced by the function's variables, in the
 *   same retry loop as events/publish.ts (more delivery ids when the fan-out was wider than the
 *   ids given);
 * - a replayed key's first event: `REPLAYED`, over arrays of one;
 * - the envelope's fields, their order and its constants, taken from `buildEnvelope`.
 *
 * What stays written here is what only the SQL path does: refusing bad arguments with the HTTP
 * path's codes and messages (the TypeScript path validates with the API's schemas), serialising
 * `data_object` as JavaScript would (`payhooks.js_json`), and the time (`clock_timestamp()`).
 * scripts/generate-sql-functions.ts writes the file; test/unit/publish-function.test.ts fails
 * when the committed file differs.
 */
export function publishFunctionSql(): string {
  const variables: Record<string, string> = {
    merchant_id: 'publish_event.merchant_id',
    environment: 'publish_event.environment',
    type: 't.type',
    idem: 'publish_event.idempotency_key',
    event_id: 'v_id',
    body: 'v_body',
    object_id: 'v_object_id',
    only_endpoint: 'NULL',
    copies: '1',
    wildcard: quote(WILDCARD_EVENT_TYPE),
    delivery_ids: 'v_ids',
    now: 'v_now',
    // One NOTIFY after either statement (below).
    notify_here: 'false',
    traceparent: 'NULL',
    week: 'v_week',
  };
  const run = (stmt: typeof PUBLISH.one) =>
    substitute(stmt, Object.fromEntries(stmt.params.map((name) => [name, variables[name]!])) as Record<keyof PublishParams, string>);
  const replayed = substitute(REPLAYED, {
    platform_ids: 'ARRAY[v_platform]',
    environments: 'ARRAY[publish_event.environment]',
    idems: 'ARRAY[publish_event.idempotency_key]',
    week: 'v_week',
  });
  return `${HEADER}${PROLOGUE}
  v_id := payhooks.new_id('evt_');
  -- The envelope (spec 2.1), fields in the order events/envelope.ts writes them, byte for byte.
  v_body := ${envelopeExpression()};
  IF octet_length(v_body) > 262144 THEN
    PERFORM payhooks.refuse('body_too_large', 'data.object', format(
      'The event is %s bytes once serialised; an event is at most 262144 bytes (256 KiB). Put less in data.object: receivers fetch large details through the API.',
      octet_length(v_body)));
  END IF;
  v_object_id := CASE WHEN json_typeof(data_object -> 'id') = 'string' THEN data_object ->> 'id' END;
  v_week := date_trunc('week', v_now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';

  -- The statements events/publish.ts runs for one event: the plain one without a key
  -- (PUBLISH_PLAIN.one), else the one with the key window (PUBLISH.one). Delivery ids for the
  -- session's last fan-out (at most ${FANOUT_HINT_MAX}); a wider one writes nothing and says how many it needs.
  v_hint := nullif(current_setting('${FANOUT_SETTING}', true), '')::integer;
  v_pool := least(coalesce(v_hint, 1), ${FANOUT_HINT_MAX});
  LOOP
    v_ids := ARRAY(SELECT payhooks.new_id('whd_') FROM generate_series(1, v_pool));
    IF publish_event.idempotency_key IS NULL THEN
${indent(run(PUBLISH_PLAIN.one).trim(), 6)}
      INTO v_plain;
      v_platform := v_plain.platform_id;
      v_needed := v_plain.needed;
      v_fanout := v_plain.fanout;
      v_inserted := true;
    ELSE
${indent(run(PUBLISH.one).trim(), 6)}
      INTO v_keyed;
      v_platform := v_keyed.platform_id;
      v_needed := v_keyed.needed;
      v_fanout := v_keyed.fanout;
      v_inserted := v_keyed.inserted;
    END IF;
    EXIT WHEN v_needed <= v_pool;
    v_pool := v_needed; -- more deliveries than ids: nothing was written; again with enough
  END LOOP;
  IF v_needed > 0 AND v_needed IS DISTINCT FROM v_hint THEN PERFORM set_config('${FANOUT_SETTING}', v_needed::text, false); END IF;
  IF v_platform IS NULL THEN
    PERFORM payhooks.refuse('resource_missing', 'merchant_id', format('No such merchant: ''%s''.', merchant_id));
  END IF;
  IF v_inserted THEN
    -- Workers hear it when the caller's transaction commits, never if it rolls back.
    IF v_fanout > 0 THEN PERFORM pg_notify(${quote(WAKE_CHANNEL)}, ''); END IF;
    RETURN QUERY SELECT v_id, v_body, v_fanout, false;
    RETURN;
  END IF;

  -- The key was used before: its event, as events/publish.ts reads it (REPLAYED).
${indent(replayed.trim(), 2)}
  INTO v_replay;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'This idempotency_key is being used by a concurrent transaction; retry.',
      DETAIL = json_build_object('code', 'idempotency_key_in_use', 'param', 'idempotency_key')::text;
  END IF;
  RETURN QUERY SELECT v_replay.event_id, v_replay.body, 0, true;
END $$;
`;
}

/**
 * The envelope as one SQL expression: `buildEnvelope`'s fields in its order, its constants as it
 * writes them, and for each field that varies the SQL value below (a field added to the envelope
 * without one fails the generator).
 */
function envelopeExpression(): string {
  const sample = buildEnvelope('evt_sample', { type: 'payment.succeeded', merchantId: 'm', environment: 'live', object: {} }, new Date(0));
  const varying: Record<string, string> = {
    id: 'to_json(v_id)::text',
    type: 'to_json(t.type)::text',
    environment: 'to_json(publish_event.environment)::text',
    merchant_id: 'to_json(publish_event.merchant_id)::text',
    created_at: `to_json(to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text`,
    data: `'{"object":' || v_object || '}'`,
  };
  if (JSON.stringify(sample.envelope.data) !== '{"object":{}}')
    throw new Error("the envelope's data changed: teach envelopeExpression its SQL");
  const constant = new Set(['object', 'api_version']);
  let literal = '';
  const parts: string[] = [];
  for (const [i, [key, value]] of Object.entries(sample.envelope).entries()) {
    literal += `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    if (constant.has(key)) {
      literal += JSON.stringify(value);
      continue;
    }
    const sql = varying[key];
    if (sql === undefined) throw new Error(`the envelope's field ${key} has no SQL in envelopeExpression`);
    parts.push(quote(literal), sql);
    literal = '';
  }
  parts.push(quote(`${literal}}`));
  return parts.join('\n    || ');
}

const quote = (text: string): string => `'${text.replace(/'/g, "''")}'`;

const indent = (text: string, spaces: number): string =>
  text
    .split('\n')
    .map((line) => (line === '' ? line : ' '.repeat(spaces) + line))
    .join('\n');

const HEADER = `-- Code generated by packages/server/scripts/generate-sql-functions.ts; DO NOT EDIT.
-- From events/publish-function.ts and the statements of events/publish-statements.ts, which the
-- TypeScript path runs too: \`npm run generate\` rewrites it.
--
-- payhooks.publish_event, the SQL outbox (docs/api.md, "Publishing from SQL"). A repeatable
-- migration: \`payhooks migrate\` (and every start) runs it after the numbered migrations whenever
-- its text differs from the text last applied (payhooks_repeatable keeps a checksum per file).
-- It must work with the schema the numbered migrations leave and keep the previous release
-- working (CREATE OR REPLACE, the same signature). Migrations 0014 to 0030 hold its earlier
-- versions, as applied then.
`;

/** The function's signature, its variables and its argument checks: the SQL path's own. */
const PROLOGUE = `CREATE OR REPLACE FUNCTION payhooks.publish_event(
  event_type text,
  merchant_id text,
  environment text,
  data_object json,
  idempotency_key text DEFAULT NULL
) RETURNS TABLE (id text, body text, deliveries integer, replayed boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT SET extra_float_digits = 1 AS $$
-- The generated statements name columns that share names with this function's arguments and
-- results (id, body, environment); every variable in them is written qualified or prefixed.
#variable_conflict use_column
DECLARE
  t payhooks.event_types%ROWTYPE;
  v_id text;
  v_now timestamptz := date_trunc('milliseconds', clock_timestamp());
  v_body text;
  v_object text;
  v_object_id text;
  v_week timestamptz;
  v_ids text[];
  v_pool integer;
  -- The session's last fan-out, as read (set again only when this one differs).
  v_hint integer;
  v_plain record;
  v_keyed record;
  v_platform text;
  v_needed integer;
  v_fanout integer;
  v_inserted boolean;
  v_replay record;
BEGIN
  IF event_type IS NULL THEN PERFORM payhooks.refuse('parameter_missing', 'type', 'Missing required parameter ''type''.'); END IF;
  IF merchant_id IS NULL THEN PERFORM payhooks.refuse('parameter_missing', 'merchant_id', 'Missing required parameter ''merchant_id''.'); END IF;
  IF environment IS NULL THEN PERFORM payhooks.refuse('parameter_missing', 'environment', 'Missing required parameter ''environment''.'); END IF;
  IF data_object IS NULL THEN PERFORM payhooks.refuse('parameter_missing', 'data[object]', 'Missing required parameter ''data[object]''.'); END IF;
  SELECT * INTO t FROM payhooks.event_types et WHERE et.type = publish_event.event_type;
  IF NOT FOUND THEN
    PERFORM payhooks.refuse('event_type_unknown', 'type', format('Invalid ''type''%s: type must be one of: %s.', payhooks.got(event_type),
      (SELECT string_agg(et.type, ', ' ORDER BY et.position) FROM payhooks.event_types et)));
  END IF;
  IF char_length(merchant_id) < 1 THEN
    PERFORM payhooks.refuse('parameter_invalid', 'merchant_id', 'Invalid ''merchant_id'': must NOT have fewer than 1 characters.');
  ELSIF char_length(merchant_id) > 64 THEN
    PERFORM payhooks.refuse('parameter_invalid', 'merchant_id', 'Invalid ''merchant_id'': must NOT have more than 64 characters.');
  END IF;
  IF environment NOT IN ('live', 'sandbox') THEN
    PERFORM payhooks.refuse('parameter_invalid', 'environment',
      format('Invalid ''environment''%s: environment must be one of: live, sandbox.', payhooks.got(environment)));
  END IF;
  IF char_length(idempotency_key) < 1 THEN
    PERFORM payhooks.refuse('parameter_invalid', 'idempotency_key', 'Invalid ''idempotency_key'': must NOT have fewer than 1 characters.');
  ELSIF char_length(idempotency_key) > 255 THEN
    PERFORM payhooks.refuse('parameter_invalid', 'idempotency_key', 'Invalid ''idempotency_key'': must NOT have more than 255 characters.');
  END IF;
  IF json_typeof(data_object) IS DISTINCT FROM 'object' THEN
    PERFORM payhooks.refuse('parameter_invalid', 'data[object]', 'Invalid ''data[object]'': must be object.');
  END IF;
  -- Text PostgreSQL can't hold (a \\u0000 escape): refused like the HTTP path refuses it.
  BEGIN
    v_object := payhooks.js_json(data_object, ARRAY['data', '.object']);
  EXCEPTION WHEN untranslatable_character THEN
    PERFORM payhooks.refuse('invalid_characters', NULL,
      'The request contains characters that cannot be stored (such as NUL, \\u0000); remove them.');
  END;
  PERFORM payhooks.check_event_object(t.type, t.family, t.status, data_object);
`;
