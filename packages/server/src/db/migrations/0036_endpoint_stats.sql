-- Endpoint health over time (delivery/attempt-stats.ts, docs/decisions/endpoint-stats.md): per
-- endpoint, per UTC hour and per UTC day, the attempts made, the successes, the failures by kind
-- and a histogram of answer times (64 buckets, a quarter of a power of two wide, from 1 ms to
-- 65 s and over). Workers count recorded attempts in memory and add them here every few seconds
-- and when they stop, one statement per flush, so recording an attempt writes nothing more.
-- Reads cost the buckets they return, never the delivery history behind them. Hours are kept
-- for 8 days and days for the retention window (db/retention.ts).
--
-- Expand only: the previous release neither reads nor writes the table.
CREATE TABLE endpoint_stats (
  endpoint_id         text NOT NULL,
  period              text NOT NULL CHECK (period IN ('hour', 'day')),
  start               timestamptz NOT NULL,
  platform_id         text NOT NULL,
  environment         text NOT NULL CHECK (environment IN ('live', 'sandbox')),
  attempts            integer NOT NULL,
  successes           integer NOT NULL,
  failed_timeout      integer NOT NULL,
  failed_connection   integer NOT NULL,
  failed_tls          integer NOT NULL,
  failed_http_4xx     integer NOT NULL,
  failed_http_429     integer NOT NULL,
  failed_http_5xx     integer NOT NULL,
  failed_disabled     integer NOT NULL,
  failed_other        integer NOT NULL,
  latency             integer[] NOT NULL,
  PRIMARY KEY (endpoint_id, period, start)
);
-- The Platform summary's read: one environment's buckets of a range, all endpoints.
CREATE INDEX endpoint_stats_platform_idx ON endpoint_stats (platform_id, environment, period, start);
-- Retention's read: the buckets past their window.
CREATE INDEX endpoint_stats_start_idx ON endpoint_stats (period, start);
