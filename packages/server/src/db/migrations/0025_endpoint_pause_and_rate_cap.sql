-- Sending that a struggling receiver can take (delivery/pause.ts, delivery/rate-cap.ts).
--
-- `paused_until`: a 429 or 503 answer with Retry-After stops new automatic attempts to the endpoint
-- until then, in every worker: the claim returns it with each row and hands back a paused
-- endpoint's rows as due at that time. Null (almost always): not paused.
--
-- `max_requests_per_second`: the merchant's cap on the endpoint's request rate (null: uncapped).
-- `rate_next_at` is where the cap's schedule stands (the generic cell rate algorithm's
-- "theoretical arrival time"): the earliest time the next request may start. Workers reserve
-- start times by moving it forward with `payhooks.reserve_rate`, one row lock per reservation,
-- so every worker process of a fleet shares one schedule per endpoint.
--
-- `delivery_attempts.rate_limited_ms`: how long the attempt waited for the cap in the worker that
-- sent it; null when the endpoint had no cap.
--
-- Expand only: the previous release ignores the columns (it doesn't pause and doesn't cap).

ALTER TABLE webhook_endpoints ADD COLUMN paused_until timestamptz;
ALTER TABLE webhook_endpoints ADD COLUMN max_requests_per_second integer
  CHECK (max_requests_per_second IS NULL OR max_requests_per_second BETWEEN 1 AND 10000);
ALTER TABLE webhook_endpoints ADD COLUMN rate_next_at timestamptz;

ALTER TABLE delivery_attempts ADD COLUMN rate_limited_ms integer;

-- Reserves up to `wanted` start times for requests to a capped endpoint, never one later than
-- `horizon_ms` from now, on the database's clock (so the workers' clocks don't matter), spaced
-- `second_ms` / max_requests_per_second apart (delivery/rate-cap.ts says why a little over 1000).
-- `granted` requests may start at `wait_ms` from now, then one every `spacing_ms`; `next_free_ms`
-- is when the cap has room again (for rows that got no start time). The row lock serialises
-- reservations of one endpoint across every worker; one plpgsql call, so the read and the write
-- are one round trip and see the same row version.
CREATE OR REPLACE FUNCTION payhooks.reserve_rate(endpoint_id text, wanted integer, horizon_ms double precision, second_ms double precision)
RETURNS TABLE (granted integer, wait_ms double precision, spacing_ms double precision, next_free_ms double precision)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
  v_rate integer;
  v_next timestamptz;
  v_now timestamptz := clock_timestamp();
  v_start timestamptz;
  v_spacing double precision;
  v_n integer;
BEGIN
  SELECT w.max_requests_per_second, w.rate_next_at INTO v_rate, v_next
  FROM webhook_endpoints w WHERE w.id = reserve_rate.endpoint_id FOR UPDATE;
  IF v_rate IS NULL THEN
    RETURN QUERY SELECT wanted, 0::float8, 0::float8, 0::float8;
    RETURN;
  END IF;
  v_spacing := second_ms / v_rate;
  v_start := greatest(coalesce(v_next, v_now), v_now);
  -- Start times within the horizon: start, start + spacing, ... <= now + horizon.
  v_n := least(wanted, greatest(0, floor((horizon_ms - extract(epoch FROM v_start - v_now) * 1000) / v_spacing)::integer + 1));
  UPDATE webhook_endpoints w SET rate_next_at = v_start + make_interval(secs => v_n * v_spacing / 1000.0)
  WHERE w.id = reserve_rate.endpoint_id AND v_n > 0;
  RETURN QUERY SELECT v_n, extract(epoch FROM v_start - v_now)::float8 * 1000, v_spacing,
    extract(epoch FROM v_start - v_now)::float8 * 1000 + v_n * v_spacing;
END $$;
