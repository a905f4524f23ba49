-- Issue 25 item 4: OpenTelemetry traces, linked from an event's publish to each attempt.
--
-- `trace_parent` is the W3C traceparent of the span that published the event, written only when
-- the publishing process traces (some OTEL_* variable set); the worker's attempt spans link to
-- it. Null otherwise, and for events published in SQL (payhooks.publish_event).
--
-- Expand only: the previous release ignores the column.

ALTER TABLE events ADD COLUMN trace_parent text;
