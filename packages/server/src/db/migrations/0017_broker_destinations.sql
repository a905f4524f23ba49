-- Issue 25 item 3: message-broker destinations (amqp, amqps, nats, tls endpoint URLs).
--
-- A broker URL's `user:password@` is split off at registration: `url` keeps the rest, and the
-- credentials are sealed here with the same key as the signing secret (AES-256-GCM, the row id
-- plus ':url_credentials' as associated data), never shown again.
--
-- Expand only (README, "Rolling upgrades"): the previous release ignores the column. It would
-- fail a broker URL's attempts as not http(s), so upgrade every worker before registering one.

ALTER TABLE webhook_endpoints ADD COLUMN url_credentials_ciphertext text;
