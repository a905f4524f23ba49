-- payhooks.publish_event, the SQL outbox (docs/api.md, "Publishing from SQL"): its whole current
-- body, kept in this one file. A repeatable migration: `payhooks migrate` (and every start) runs
-- it after the numbered migrations whenever its text differs from the text last applied
-- (payhooks_repeatable keeps a checksum per file), so a change to publishing edits this file
-- instead of copying the function into a new numbered migration. It must work with the schema
-- the numbered migrations leave, and keep the previous release working (CREATE OR REPLACE, the
-- same signature). Migrations 0014 to 0030 hold its earlier versions, as applied then.
CREATE OR REPLACE FUNCTION payhooks.publish_event(
  event_type text,
  merchant_id text,
  environment text,
  data_object json,
  idempotency_key text DEFAULT NULL
) RETURNS TABLE (id text, body text, deliveries integer, replayed boolean)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path FROM CURRENT SET extra_float_digits = 1 AS $$
DECLARE
  t payhooks.event_types%ROWTYPE;
  v_platform text;
  v_id text;
  v_now timestamptz := date_trunc('milliseconds', clock_timestamp());
  v_body text;
  v_count integer;
  v_object text;
  v_week timestamptz;
  v_rows integer;
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
  -- Text PostgreSQL can't hold (a \u0000 escape): refused like the HTTP path refuses it.
  BEGIN
    v_object := payhooks.js_json(data_object, ARRAY['data', '.object']);
  EXCEPTION WHEN untranslatable_character THEN
    PERFORM payhooks.refuse('invalid_characters', NULL,
      'The request contains characters that cannot be stored (such as NUL, \u0000); remove them.');
  END;
  PERFORM payhooks.check_event_object(t.type, t.family, t.status, data_object);

  v_id := payhooks.new_id('evt_');
  -- The envelope of spec 2.1, fields in the spec's order: events/envelope.ts, byte for byte.
  v_body := '{"id":' || to_json(v_id)::text
    || ',"object":"event","type":' || to_json(t.type)::text
    || ',"api_version":"v1","environment":' || to_json(environment)::text
    || ',"merchant_id":' || to_json(merchant_id)::text
    || ',"created_at":' || to_json(to_char(v_now AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))::text
    || ',"data":{"object":' || v_object || '}}';
  IF octet_length(v_body) > 262144 THEN
    PERFORM payhooks.refuse('body_too_large', 'data.object', format(
      'The event is %s bytes once serialised; an event is at most 262144 bytes (256 KiB). Put less in data.object: receivers fetch large details through the API.',
      octet_length(v_body)));
  END IF;

  SELECT m.platform_id INTO v_platform FROM merchants m WHERE m.id = publish_event.merchant_id;
  IF v_platform IS NULL THEN
    PERFORM payhooks.refuse('resource_missing', 'merchant_id', format('No such merchant: ''%s''.', merchant_id));
  END IF;

  IF idempotency_key IS NOT NULL THEN
    -- The key's rows as events/publish.ts writes them (migration 0028's header): its week (and
    -- the next in the week's last day), unless an event of the previous week holds the key.
    -- Published only if every row was written; otherwise the key's newest event in the window
    -- is answered (an older one of the same key may still be kept).
    v_week := date_trunc('week', v_now AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
    v_rows := CASE WHEN v_now >= v_week + interval '144 hours' THEN 2 ELSE 1 END;
    INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at, week)
    SELECT v_platform, publish_event.environment, publish_event.idempotency_key, v_id, v_now, g.w
    FROM (VALUES (v_week), (v_week + interval '168 hours')) AS g(w)
    WHERE (g.w = v_week OR v_now >= v_week + interval '144 hours')
      -- The previous week's main row only (one index probe in one partition, whatever the weeks
      -- kept), in a scalar subquery, never a hash anti-join.
      AND (SELECT 1 FROM event_idempotency_keys o
           WHERE o.platform_id = v_platform AND o.environment = publish_event.environment
             AND o.idempotency_key = publish_event.idempotency_key
             AND o.week = v_week - interval '168 hours' AND o.event_created_at >= o.week
           LIMIT 1) IS NULL
    ORDER BY g.w
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    IF v_count < v_rows THEN
      RETURN QUERY
        SELECT e.id, e.body, 0, true
        FROM event_idempotency_keys k JOIN events e ON e.id = k.event_id AND e.created_at = k.event_created_at
        WHERE k.platform_id = v_platform AND k.environment = publish_event.environment
          AND k.idempotency_key = publish_event.idempotency_key
          AND k.week >= v_week - interval '168 hours' AND k.week <= v_week + interval '168 hours'
        ORDER BY e.created_at DESC, e.id DESC
        LIMIT 1;
      IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = 'This idempotency_key is being used by a concurrent transaction; retry.',
          DETAIL = json_build_object('code', 'idempotency_key_in_use', 'param', 'idempotency_key')::text;
      END IF;
      RETURN;
    END IF;
  END IF;

  INSERT INTO events (id, platform_id, environment, merchant_id, type, body, idempotency_key, created_at, object_id)
  VALUES (v_id, v_platform, environment, merchant_id, t.type, v_body, idempotency_key, v_now,
          CASE WHEN json_typeof(data_object -> 'id') = 'string' THEN data_object ->> 'id' END);
  -- One delivery and one queue row per enabled, undeleted endpoint of the Platform and
  -- environment subscribed to the type or to '*' (events/publish.ts).
  WITH fan AS (
    SELECT w.id AS endpoint_id, w.delivery_order FROM webhook_endpoints w
    WHERE w.platform_id = v_platform AND w.environment = publish_event.environment AND w.status = 'enabled'
      AND w.deleted_at IS NULL AND (t.type = ANY (w.enabled_events) OR '*' = ANY (w.enabled_events))
  ), d AS (
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, copy, platform_id, environment, state, attempt_count,
                                    automatic_attempts, next_attempt_at, created_at, updated_at, event_type)
    SELECT payhooks.new_id('whd_'), v_id, fan.endpoint_id, 1, v_platform, publish_event.environment, 'pending', 0, 0,
           v_now, v_now, v_now, t.type
    FROM fan
    RETURNING webhook_deliveries.id, webhook_deliveries.endpoint_id
  )
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at, order_key)
  SELECT d.id, v_now, v_id, d.endpoint_id, v_platform, v_now,
         CASE WHEN fan.delivery_order = 'per_object' AND json_typeof(data_object -> 'id') = 'string' THEN data_object ->> 'id' END
  FROM d JOIN fan ON fan.endpoint_id = d.endpoint_id;
  GET DIAGNOSTICS v_count = ROW_COUNT;
  -- Delivered to listening workers when the caller's transaction commits (never if it rolls back).
  IF v_count > 0 THEN PERFORM pg_notify('payhooks_deliveries', ''); END IF;
  RETURN QUERY SELECT v_id, v_body, v_count, false;
END $$;
