-- A traced attempt (OpenTelemetry on) carries a `traceparent` header, or message header, naming
-- its span; the attempt log lists the headers the request was sent with, so it keeps that value
-- too. Null when tracing was off for the attempt.
--
-- Expand only: the previous release leaves it null, as its attempts carried no traceparent in
-- the log before.

ALTER TABLE delivery_attempts ADD COLUMN trace_parent text;
