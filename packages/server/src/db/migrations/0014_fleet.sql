-- Issue 23: payhooks as a fleet. Expand only: every table, index and function here is new, so
-- the previous release keeps working against this schema (docs/operations in README, "Upgrading").

-- `payhooks listen` across API processes. The worker's request for a session may reach any API
-- process, but only the one holding the CLI's stream can hand it over. The process that got the
-- request stores it here and NOTIFYs `payhooks_listen` with the row's id (a NOTIFY carries at
-- most 8000 bytes; a body may be 64 KiB); the holder reads it, pushes it to the CLI, and the
-- CLI's result (posted to any process) is written to `result` and announced on
-- `payhooks_listen_done`, which wakes the process waiting to answer the worker. Rows live seconds.
-- UNLOGGED: a crash or failover loses only relays in flight, which the worker retries.
CREATE UNLOGGED TABLE listen_relays (
  id          text PRIMARY KEY,          -- fwd_…, the forward id the CLI echoes back
  endpoint_id text NOT NULL,             -- the listen session (a listen-kind endpoint)
  platform_id text NOT NULL,
  environment text NOT NULL,
  event_id    text NOT NULL,
  event_type  text NOT NULL,
  signature   text NOT NULL,             -- the Service-Signature header the worker sent
  body        text NOT NULL,             -- the bytes the worker sent
  created_at  timestamptz NOT NULL,
  result      jsonb                      -- the CLI's result once it came: {status_code, body, duration_ms, error}
);
CREATE INDEX listen_relays_endpoint_idx ON listen_relays (endpoint_id);
CREATE INDEX listen_relays_created_idx ON listen_relays (created_at);

-- The per-endpoint cap on manual attempts (replay, resend, "Replay all failed since…") shared
-- by every API process when no Redis is configured: an attempt holds one of the endpoint's
-- PAYHOOKS_ENDPOINT_CONCURRENCY slots while it runs. A slot whose holder died frees itself at
-- `expires_at` (longer than any attempt). Logged: after a failover the cap still holds.
CREATE TABLE manual_attempt_slots (
  endpoint_id text NOT NULL,
  slot        integer NOT NULL,
  holder      text NOT NULL,
  expires_at  timestamptz NOT NULL,
  PRIMARY KEY (endpoint_id, slot)
);

-- The outbox for payment cores in any language: `SELECT * FROM payhooks.publish_event(…)` inside
-- the caller's own transaction publishes like POST /internal/v1/events (same envelope bytes,
-- same checks, same fan-out, same idempotency), and workers are woken when it commits.
CREATE SCHEMA payhooks;

-- The event-type catalog as the function checks it (spec 6.1): a test holds it equal to
-- @payhooks/contract's, so a type added there needs a migration adding its row here. `status`
-- is what data.object.status must be for the type (null: not checked).
-- `position`: the type's place in the catalog (the order error messages list them in).
CREATE TABLE payhooks.event_types (
  type     text PRIMARY KEY,
  family   text NOT NULL CHECK (family IN ('payment', 'checkout_session', 'webhook_endpoint')),
  status   text,
  position integer NOT NULL UNIQUE
);
INSERT INTO payhooks.event_types (type, family, status, position) VALUES
  ('payment.created', 'payment', 'created', 1),
  ('payment.requires_action', 'payment', 'requires_action', 2),
  ('payment.under_review', 'payment', 'under_review', 3),
  ('payment.processing', 'payment', 'processing', 4),
  ('payment.succeeded', 'payment', 'succeeded', 5),
  ('payment.failed', 'payment', 'failed', 6),
  ('payment.cancelled', 'payment', 'cancelled', 7),
  ('payment.expired', 'payment', 'expired', 8),
  ('checkout_session.completed', 'checkout_session', 'complete', 9),
  ('checkout_session.expired', 'checkout_session', 'expired', 10),
  ('webhook_endpoint.disabled', 'webhook_endpoint', 'disabled', 11);

-- A refusal the caller can act on: SQLSTATE 22023 (invalid_parameter_value), the message the
-- HTTP path answers with, and in DETAIL a JSON object with its machine-readable `code` and `param`.
CREATE FUNCTION payhooks.refuse(code text, param text, message text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = message,
    DETAIL = CASE WHEN param IS NULL THEN json_build_object('code', code) ELSE json_build_object('code', code, 'param', param) END::text;
END $$;

-- A value quoted in a message as the HTTP path quotes it: short ones without control characters.
CREATE FUNCTION payhooks.got(value text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN char_length(value) <= 100 AND value !~ '[\x01-\x1f]' THEN format(' (got ''%s'')', value) ELSE '' END
$$;

-- An id like the service's (ids.ts): the prefix and 24 base62 characters, unbiased (bytes of 248
-- and above are skipped). Random bytes from gen_random_uuid() (core PostgreSQL, a strong
-- source), leaving out its version and variant bytes.
CREATE FUNCTION payhooks.new_id(prefix text) RETURNS text
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  alphabet constant text := '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  out text := prefix;
  bytes bytea;
  b integer;
  n integer := 0;
BEGIN
  WHILE n < 24 LOOP
    bytes := uuid_send(gen_random_uuid());
    FOR i IN 0..15 LOOP
      CONTINUE WHEN i IN (6, 8);
      b := get_byte(bytes, i);
      CONTINUE WHEN b >= 248;
      out := out || substr(alphabet, b % 62 + 1, 1);
      n := n + 1;
      EXIT WHEN n = 24;
    END LOOP;
  END LOOP;
  RETURN out;
END $$;

-- A JSON number as JavaScript writes it (Number.prototype.toString, which JSON.stringify uses):
-- the shortest digits that read back as the same double, in plain notation from 1e-7 to 1e21 and
-- `1.5e+21` style outside. float8's own output gives those shortest digits (extra_float_digits 1);
-- only the notation is rewritten. Beyond the double's range, as JSON.parse reads it: null
-- (Infinity) or 0.
CREATE FUNCTION payhooks.js_number(literal text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET extra_float_digits = 1 AS $$
DECLARE
  f float8;
  s text;
  neg boolean;
  mantissa text;
  digits text;
  point integer;
  k integer;
  n integer;
  e integer;
  m numeric;
  shorter text;
  shorter_n integer;
BEGIN
  BEGIN
    f := literal::float8;
  EXCEPTION WHEN numeric_value_out_of_range THEN
    RETURN CASE WHEN literal ~* 'e-' OR literal ~ '^-?0' THEN '0' ELSE 'null' END;
  END;
  IF f = 0 THEN RETURN '0'; END IF; -- -0 too
  s := f::text;
  neg := left(s, 1) = '-';
  IF neg THEN s := substr(s, 2); END IF;
  IF position('e' IN s) > 0 THEN
    mantissa := split_part(s, 'e', 1);
    e := split_part(s, 'e', 2)::integer;
  ELSE
    mantissa := s;
    e := 0;
  END IF;
  IF position('.' IN mantissa) > 0 THEN
    point := position('.' IN mantissa) - 1;
    digits := replace(mantissa, '.', '');
  ELSE
    point := length(mantissa);
    digits := mantissa;
  END IF;
  WHILE left(digits, 1) = '0' LOOP
    digits := substr(digits, 2);
    point := point - 1;
  END LOOP;
  digits := rtrim(digits, '0');
  k := length(digits);
  n := point + e; -- the value is 0.<digits> x 10^n
  -- float8's output is occasionally a digit or more longer than the shortest that reads back
  -- (-6.406e+21 comes out as -6.406000000000001e+21): while one digit fewer, rounded, still reads
  -- back as the same double, take it. Reading back is monotone in the digits kept, so the first
  -- failure ends the search.
  WHILE k >= 16 LOOP
    m := left(digits, k - 1)::numeric + CASE WHEN substr(digits, k, 1) >= '5' THEN 1 ELSE 0 END;
    shorter := m::text;
    shorter_n := n + CASE WHEN length(shorter) > k - 1 THEN 1 ELSE 0 END;
    shorter := rtrim(shorter, '0');
    -- Rounded up past the largest double: not a candidate (and float8 would refuse it).
    EXIT WHEN ('0.' || shorter || 'e' || shorter_n)::numeric > 1.7976931348623157e308;
    EXIT WHEN ('0.' || shorter || 'e' || shorter_n)::float8 <> abs(f);
    digits := shorter;
    n := shorter_n;
    k := length(digits);
  END LOOP;
  IF k <= n AND n <= 21 THEN
    s := digits || repeat('0', n - k);
  ELSIF 0 < n AND n <= 21 THEN
    s := left(digits, n) || '.' || substr(digits, n + 1);
  ELSIF -6 < n AND n <= 0 THEN
    s := '0.' || repeat('0', -n) || digits;
  ELSE
    s := left(digits, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
      || 'e' || CASE WHEN n - 1 >= 0 THEN '+' ELSE '-' END || abs(n - 1)::text;
  END IF;
  RETURN CASE WHEN neg THEN '-' || s ELSE s END;
END $$;

-- A JSON value as JSON.stringify(JSON.parse(text)) writes it, which is what the HTTP path stores:
-- no whitespace, strings escaped the same way, numbers as above, an object's keys in JavaScript's
-- order (array-index keys such as "0" or "42" first, ascending, then the others as sent), and a
-- key sent twice kept once, at its first place, with its last value. Refused like the HTTP path
-- refuses them: a `__proto__` key or a `constructor` holding a `prototype` (invalid_json), and
-- objects or arrays nested deeper than a request body may be (nesting_too_deep, api/json-body.ts).
-- `path`: where `v` is in the request body, as the HTTP path names it (`data`, `.object`, `[0]`).
CREATE FUNCTION payhooks.js_json(v json, path text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET extra_float_digits = 1 AS $$
DECLARE
  kind text := json_typeof(v);
  out text;
BEGIN
  IF (kind = 'object' OR kind = 'array') AND cardinality(path) >= 64 THEN
    PERFORM payhooks.refuse('nesting_too_deep', array_to_string(path, ''),
      format('The body is nested more than 64 levels deep (under ''%s…''); flatten it.', array_to_string(path[1:3], '')));
  END IF;
  IF kind = 'object' THEN
    IF EXISTS (SELECT 1 FROM json_each(v) AS e WHERE e.key = '__proto__'
               OR (e.key = 'constructor' AND json_typeof(e.value) = 'object'
                   AND EXISTS (SELECT 1 FROM json_each(e.value) AS c WHERE c.key = 'prototype'))) THEN
      PERFORM payhooks.refuse('invalid_json', NULL, 'The body is not valid JSON.');
    END IF;
    SELECT '{' || coalesce(string_agg(to_json(o.key)::text || ':' || payhooks.js_json(o.value, path || ('.' || o.key)), ','
                                      ORDER BY o.idx IS NULL, o.idx, o.pos), '') || '}'
      INTO out
      FROM (
        SELECT g.key, g.value, g.pos, CASE WHEN g.idx <= 4294967294 THEN g.idx END AS idx
        FROM (
          SELECT e.key, (array_agg(e.value ORDER BY e.ord DESC))[1] AS value, min(e.ord) AS pos,
                 CASE WHEN e.key ~ '^(0|[1-9][0-9]{0,9})$' THEN e.key::bigint END AS idx
          FROM json_each(v) WITH ORDINALITY AS e(key, value, ord)
          GROUP BY e.key
        ) AS g
      ) AS o;
    RETURN out;
  ELSIF kind = 'array' THEN
    SELECT '[' || coalesce(string_agg(payhooks.js_json(a.value, path || ('[' || (a.ord - 1) || ']')), ',' ORDER BY a.ord), '') || ']'
      INTO out
      FROM json_array_elements(v) WITH ORDINALITY AS a(value, ord);
    RETURN out;
  ELSIF kind = 'string' THEN
    RETURN to_json(v #>> '{}')::text;
  ELSIF kind = 'number' THEN
    RETURN payhooks.js_number(v::text);
  ELSIF kind = 'boolean' THEN
    RETURN v #>> '{}';
  END IF;
  RETURN 'null';
END $$;

-- What POST /internal/v1/events checks about data.object (an object already) once its shape is
-- valid JSON (payments/event-objects.ts, endpoints/event-objects.ts, then events/envelope.ts),
-- in that order, with the same codes, params and messages.
CREATE FUNCTION payhooks.check_event_object(event_type text, family text, want_status text, o json) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
  ts constant text := '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$';
  asset constant text := '^[A-Z0-9]+(-[A-Z0-9]+)*\.[A-Z0-9]+(-[A-Z0-9]+)*$';
  amount constant text := '^[0-9]+\.[0-9]{2}$';
  str constant text := 'string';
  typ text;
BEGIN
  IF family = 'payment' THEN
    IF json_typeof(o -> 'object') IS DISTINCT FROM str OR o ->> 'object' <> 'payment' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.object', 'A payment.* event carries a Payment: data.object.object must be ''payment''.');
    END IF;
    IF json_typeof(o -> 'id') IS DISTINCT FROM str OR NOT (o ->> 'id') ~ '^pay_[A-Za-z0-9_]+$' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.id', 'data.object.id must be a payment id (pay_…).');
    END IF;
    IF json_typeof(o -> 'status') IS DISTINCT FROM str OR o ->> 'status' <> want_status THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.status', format(
        'A %s event carries a Payment whose status is ''%s''; data.object.status is %s.', event_type, want_status,
        CASE WHEN o -> 'status' IS NULL THEN 'null' ELSE payhooks.js_json(o -> 'status', ARRAY['data', '.object', '.status']) END));
    END IF;
    IF json_typeof(o -> 'amount') IS DISTINCT FROM str OR NOT (o ->> 'amount') ~ amount THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.amount', 'data.object.amount must be a decimal string with two decimals, e.g. "10.00".');
    END IF;
    IF json_typeof(o -> 'asset_code') IS DISTINCT FROM str OR NOT (o ->> 'asset_code') ~ asset THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.asset_code',
        'data.object.asset_code must be <ASSET>.<NETWORK> in upper-case letters, digits and -, e.g. "USDC.ETH".');
    END IF;
    IF json_typeof(o -> 'metadata') IS DISTINCT FROM 'object' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.metadata',
        'data.object.metadata must be an object (the merchant''s metadata, echoed unchanged).');
    END IF;
  ELSIF family = 'checkout_session' THEN
    typ := event_type;
    IF json_typeof(o -> 'object') IS DISTINCT FROM str OR o ->> 'object' <> 'checkout_session' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.object', format('A %s event carries a checkout session: data.object.object must be ''checkout_session''.', typ));
    END IF;
    IF json_typeof(o -> 'id') IS DISTINCT FROM str OR NOT (o ->> 'id') ~ '^cs_[A-Za-z0-9_]+$' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.id', format('A %s event carries a checkout session: data.object.id must be a checkout session id (cs_…).', typ));
    END IF;
    IF json_typeof(o -> 'status') IS DISTINCT FROM str OR o ->> 'status' <> want_status THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.status', format('A %s event carries a checkout session: data.object.status must be ''%s''.', typ, want_status));
    END IF;
    IF json_typeof(o -> 'amount') IS DISTINCT FROM str OR NOT (o ->> 'amount') ~ amount THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.amount', format('A %s event carries a checkout session: data.object.amount must be a decimal string with two decimals.', typ));
    END IF;
    IF json_typeof(o -> 'asset_code') IS DISTINCT FROM str OR NOT (o ->> 'asset_code') ~ asset THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.asset_code', format('A %s event carries a checkout session: data.object.asset_code must be <ASSET>.<NETWORK>, e.g. "USDC.ETH".', typ));
    END IF;
    IF json_typeof(o -> 'metadata') IS DISTINCT FROM 'object'
       OR EXISTS (SELECT 1 FROM json_each(o -> 'metadata') AS m WHERE json_typeof(m.value) <> str) THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.metadata', format('A %s event carries a checkout session: data.object.metadata must be an object of string values.', typ));
    END IF;
    IF json_typeof(o -> 'payment') IS DISTINCT FROM str OR NOT (o ->> 'payment') ~ '^pay_[A-Za-z0-9_]+$' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.payment', format('A %s event carries a checkout session: data.object.payment must be the payment id (pay_…).', typ));
    END IF;
    IF json_typeof(o -> 'url') IS DISTINCT FROM str THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.url', format('A %s event carries a checkout session: data.object.url must be the hosted page URL.', typ));
    END IF;
    IF json_typeof(o -> 'success_url') IS DISTINCT FROM str THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.success_url', format('A %s event carries a checkout session: data.object.success_url must be a URL.', typ));
    END IF;
    IF json_typeof(o -> 'cancel_url') IS NULL OR json_typeof(o -> 'cancel_url') NOT IN ('null', 'string') THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.cancel_url', format('A %s event carries a checkout session: data.object.cancel_url must be a URL or null.', typ));
    END IF;
    IF json_typeof(o -> 'expires_at') IS DISTINCT FROM str OR NOT (o ->> 'expires_at') ~ ts THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.expires_at', format('A %s event carries a checkout session: data.object.expires_at must be a timestamp YYYY-MM-DDThh:mm:ssZ.', typ));
    END IF;
    IF json_typeof(o -> 'completed_at') IS NULL
       OR NOT (json_typeof(o -> 'completed_at') = 'null' OR (json_typeof(o -> 'completed_at') = str AND (o ->> 'completed_at') ~ ts)) THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.completed_at', format('A %s event carries a checkout session: data.object.completed_at must be a timestamp or null.', typ));
    END IF;
    IF event_type = 'checkout_session.completed' AND json_typeof(o -> 'completed_at') = 'null' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.completed_at', format('A %s event carries a checkout session: data.object.completed_at must be the completion time.', typ));
    END IF;
  ELSIF family = 'webhook_endpoint' THEN
    IF json_typeof(o -> 'object') IS DISTINCT FROM str OR o ->> 'object' <> 'webhook_endpoint' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.object', format('A %s event carries a webhook endpoint: data.object.object must be ''webhook_endpoint''.', event_type));
    END IF;
    IF json_typeof(o -> 'id') IS DISTINCT FROM str OR NOT (o ->> 'id') ~ '^we_[A-Za-z0-9]+$' THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.id', 'data.object.id must be a webhook endpoint id (we_…).');
    END IF;
    IF want_status IS NOT NULL AND (json_typeof(o -> 'status') IS DISTINCT FROM str OR o ->> 'status' <> want_status) THEN
      PERFORM payhooks.refuse('parameter_invalid', 'data.object.status', format(
        'A %s event carries a disabled endpoint; data.object.status is %s.', event_type,
        CASE WHEN o -> 'status' IS NULL THEN 'null' ELSE payhooks.js_json(o -> 'status', ARRAY['data', '.object', '.status']) END));
    END IF;
  END IF;
  -- Whatever the type (events/envelope.ts).
  IF EXISTS (SELECT 1 FROM json_each(o) AS e WHERE e.key IN ('secret', 'secret_ciphertext')) THEN
    PERFORM payhooks.refuse('parameter_invalid', 'data.object.secret', 'An event never carries a signing secret: remove data.object.secret.');
  END IF;
END $$;

-- Publishes one event in the caller's transaction. Returns the event's id, its body (the exact
-- bytes every delivery sends), how many deliveries it fanned out to, and whether
-- `idempotency_key` had been used before (then nothing is written and the first event is
-- returned). Refusals raise SQLSTATE 22023 (see payhooks.refuse); the caller's transaction is
-- then aborted, like any failed statement.
--
-- SECURITY DEFINER: it runs with the rights of payhooks' role, so a payment core's role needs
-- nothing but USAGE on this schema and EXECUTE on this function (granted by the operator), never
-- access to payhooks' tables (signing secrets, other Platforms' events). Its search_path is the
-- one payhooks' tables were created under, fixed when the migration ran, so a caller can't
-- redirect its table names to objects of its own.
CREATE FUNCTION payhooks.publish_event(
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
  IF octet_length(v_body) > 256 * 1024 THEN
    PERFORM payhooks.refuse('body_too_large', NULL, 'The event is larger than 256 KiB.');
  END IF;

  SELECT m.platform_id INTO v_platform FROM merchants m WHERE m.id = publish_event.merchant_id;
  IF v_platform IS NULL THEN
    PERFORM payhooks.refuse('resource_missing', 'merchant_id', format('No such merchant: ''%s''.', merchant_id));
  END IF;

  IF idempotency_key IS NOT NULL THEN
    INSERT INTO event_idempotency_keys (platform_id, environment, idempotency_key, event_id, event_created_at)
    VALUES (v_platform, environment, idempotency_key, v_id, v_now)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    IF v_count = 0 THEN
      RETURN QUERY
        SELECT e.id, e.body, 0, true
        FROM event_idempotency_keys k JOIN events e ON e.id = k.event_id AND e.created_at = k.event_created_at
        WHERE k.platform_id = v_platform AND k.environment = publish_event.environment
          AND k.idempotency_key = publish_event.idempotency_key;
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
    SELECT w.id AS endpoint_id FROM webhook_endpoints w
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
  INSERT INTO delivery_queue (delivery_id, delivery_created_at, event_id, endpoint_id, platform_id, due_at)
  SELECT d.id, v_now, v_id, d.endpoint_id, v_platform, v_now FROM d;
  GET DIAGNOSTICS v_count = ROW_COUNT;
  -- Delivered to listening workers when the caller's transaction commits (never if it rolls back).
  IF v_count > 0 THEN PERFORM pg_notify('payhooks_deliveries', ''); END IF;
  RETURN QUERY SELECT v_id, v_body, v_count, false;
END $$;

-- Nobody but payhooks' own role calls these until the operator grants it (README, "Publishing").
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA payhooks FROM PUBLIC;
